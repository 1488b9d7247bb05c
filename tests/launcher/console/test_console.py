"""`medical_team.launcher.console.console`: the run log takes every byte written to fd 1 and 2; `say` still reaches the terminal.

Each case runs in a child process whose stdout/stderr are pipes standing in for the terminal.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHILD = """
import os, subprocess, sys
from pathlib import Path
from medical_team.launcher.console.console import output_is_logged, output_to_log, say

log, stream = Path(sys.argv[1]), sys.argv[2] == "stream"
say("before")
with output_to_log(log, stream=stream):
    print("python stdout")
    print("python stderr", file=sys.stderr)
    os.write(1, b"fd 1\\n")
    os.write(2, b"fd 2\\n")
    subprocess.run(["sh", "-c", "echo child stdout; echo child stderr >&2"], check=True)
    say("stage")
    say("problem", err=True)
    print("logged:", output_is_logged())
say("after")
with output_to_log(log):
    raise RuntimeError("boom")
"""
NOISE = ["python stdout", "python stderr", "fd 1", "fd 2", "child stdout", "child stderr"]


def run_child(tmp_path: Path, mode: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run CHILD with a log under tmp_path; return the process result and the log's text."""
    log = tmp_path / "logs" / "run.log"
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(log), mode], capture_output=True, text=True, timeout=60, check=False
    )
    return result, log.read_text()


def test_quiet_terminal_gets_only_what_is_said(tmp_path: Path) -> None:
    result, log = run_child(tmp_path, "quiet")
    assert result.returncode == 1  # the RuntimeError after the second block
    assert result.stdout.splitlines() == ["before", "stage", "after"]
    assert result.stderr.splitlines()[0] == "problem"  # then the interpreter's report of the RuntimeError
    assert not any(line in result.stdout + result.stderr for line in NOISE)
    for line in [*NOISE, "stage", "problem", "logged: True"]:
        assert line in log, line
    assert "before" not in log and "after" not in log


def test_an_exception_leaving_the_block_is_in_the_log_and_still_raised(tmp_path: Path) -> None:
    result, log = run_child(tmp_path, "quiet")
    assert "Traceback" in log and "RuntimeError: boom" in log
    assert result.stderr.strip().splitlines()[-1] == "RuntimeError: boom"  # the interpreter's own report


def test_streaming_shows_everything_and_logs_it(tmp_path: Path) -> None:
    result, log = run_child(tmp_path, "stream")
    terminal = result.stdout + result.stderr
    for line in [*NOISE, "stage", "problem", "logged: False"]:
        assert line in terminal and line in log, line
