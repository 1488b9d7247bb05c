"""The metrics file's writer: a record cut short by a real file-size limit or a full filesystem ends the run.

Each fault is real, in a child process that logs two steps through `AppendingFileLogger`: a file-size limit
(RLIMIT_FSIZE, set before the child starts; Python ignores SIGXFSZ, so the write returns short and then fails with
EFBIG instead of killing it), and a tmpfs too small for the second record (`tests/tiny_filesystem.py`: ENOSPC).
The limit sits between the end of step 1's record and the end of step 2's.

Run: PYTHONPATH=tests .venv/bin/python -m pytest -q tests/task_runner/test_metrics_file.py
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from tiny_filesystem import on_tiny_filesystem, tiny_filesystem_unavailable

FILLER = 3000  # characters of each record's one metric
RECORD_BYTES = FILLER + len('{"step":1,"data":{"filler":""}}\n')
LIMIT_BYTES = RECORD_BYTES + RECORD_BYTES // 2  # step 1's record fits, half of step 2's does
TINY_FS = "4k"  # one page: step 1's record fits, step 2's does not

CHILD = f"""
import sys
from medical_team.task_runner.metrics_file import AppendingFileLogger
from medical_team.run.failures import MetricsWriteError

logger = AppendingFileLogger("p", "e")
logger.log({{"filler": "a" * {FILLER}}}, step=1)
try:
    logger.log({{"filler": "b" * {FILLER}}}, step=2)
except MetricsWriteError as error:
    print(f"MetricsWriteError: {{error}}")
logger.finish()
"""


def _child(
    path: Path, command: list[str] | None = None, preexec_fn: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run CHILD (or `command`, which runs it) with its metrics file at `path`."""
    env = {**os.environ, "VERL_FILE_LOGGER_PATH": str(path), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        command or [sys.executable, "-c", CHILD],
        env=env,
        preexec_fn=preexec_fn,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT_BYTES, LIMIT_BYTES))


def _records(text: str) -> list[dict]:
    assert text.endswith("\n"), "the file ends inside a record"
    return [json.loads(line) for line in text.splitlines()]


def test_a_file_size_limit_ends_the_step_with_its_cause_and_keeps_the_records_before_it(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    result = _child(path, preexec_fn=_limit_file_size)

    assert result.returncode == 0, result.stderr[-3000:]
    half = LIMIT_BYTES - RECORD_BYTES
    assert result.stdout.strip() == (
        f"MetricsWriteError: step 2's metrics could not be written to {path} ([Errno 27] File too large after "
        f"{half} of {RECORD_BYTES} bytes), so the step was not committed: the checkpoint tracker still names the "
        "checkpoint before it; make room on that disk (or raise the file-size limit, `ulimit -f`) and rerun with "
        "trainer.resume_mode=auto, which replays the step"
    )
    assert [record["step"] for record in _records(path.read_text())] == [1]  # the piece of step 2 was cut off
    assert path.stat().st_size == RECORD_BYTES


def test_a_full_filesystem_ends_the_step_with_its_cause_and_keeps_the_records_before_it(tmp_path: Path) -> None:
    reason = tiny_filesystem_unavailable()
    if reason:
        pytest.skip(reason)
    mount, copy = tmp_path / "tiny", tmp_path / "copy"
    command = on_tiny_filesystem(TINY_FS, mount, copy, [sys.executable, "-c", CHILD])
    result = _child(mount / "metrics.jsonl", command=command)

    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith(
        f"MetricsWriteError: step 2's metrics could not be written to {mount / 'metrics.jsonl'} ([Errno 28] No space "
        f"left on device after {4096 - RECORD_BYTES} of {RECORD_BYTES} bytes), so the step was not committed"
    ), result.stdout
    assert [record["step"] for record in _records((copy / "metrics.jsonl").read_text())] == [1]


def test_records_are_verls_records_written_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """verl's `FileLogger.log` writes each record through `self.fp.write`; the swapped `fp` must see those bytes."""
    from verl.utils.tracking import FileLogger

    from medical_team.task_runner.metrics_file import AppendingFileLogger, WholeWrites

    data = {"actor/pg_loss": 0.25, "game/count/vanilla": 3.0}
    for name, logger_class in (("theirs", FileLogger), ("ours", AppendingFileLogger)):
        monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(tmp_path / f"{name}.jsonl"))
        logger = logger_class("p", "e")
        assert isinstance(logger.fp, WholeWrites) == (logger_class is AppendingFileLogger)
        logger.log(data, step=7)
        logger.finish()
    assert (tmp_path / "ours.jsonl").read_bytes() == (tmp_path / "theirs.jsonl").read_bytes()
    assert _records((tmp_path / "ours.jsonl").read_text()) == [{"step": 7, "data": data}]
