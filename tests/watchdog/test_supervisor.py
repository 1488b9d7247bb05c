"""The watchdog against real processes: an attempt that hangs is seen, recorded, stopped and restarted; one that
crashes is restarted; a failure that repeats ends with exit status 7; a save still writing is no stall; a stop asked
for is handed on and nothing restarts.

    .venv/bin/python -m pytest -q tests/watchdog/test_supervisor.py

The attempts are tests/watchdog/attempt_program.py: a real process writing the real progress record, with a helper
process beside it. The limits are seconds (floor 8 s) where the program's phases take 0.05 s.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from medical_team.run.failures import REPEATED_FAILURE_EXIT
from medical_team.run.settings import WatchdogSettings
from medical_team.run.watchdog_files import EVENTS_NAME, WATCHDOG_FOLDER
from medical_team.watchdog.supervisor import WatchedRun, watch

PROGRAM = Path(__file__).with_name("attempt_program.py")
FLOOR_S = 8.0
SETTINGS = WatchdogSettings(
    enabled=True,
    k=5,
    floor_s=FLOOR_S,
    startup_s=60,
    first_steps=0,
    first_steps_s=FLOOR_S,
    max_restarts=2,
    poll_s=0.2,
    kill_grace_s=2,
)


def watched(tmp_path: Path, fault: str, *, step: int = 3, attempts: int = 1, max_restarts: int = 2) -> WatchedRun:
    """A five-step run of the program with `fault` at `step` in its first `attempts` attempts."""
    return WatchedRun(
        command=[sys.executable, str(PROGRAM), str(tmp_path), "5", fault, str(step), str(attempts)],
        output_dir=tmp_path,
        checkpoint_dir=tmp_path / "checkpoints",
        run_folder=str(tmp_path),
        settings=WatchdogSettings(**{**SETTINGS.__dict__, "max_restarts": max_restarts}),
    )


def steps_logged(tmp_path: Path) -> list[int]:
    lines = (tmp_path / "checkpoints" / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line)["step"] for line in lines]


def events(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / WATCHDOG_FOLDER / EVENTS_NAME).read_text().splitlines()]


@pytest.mark.parametrize("fault", ["sleep", "sigstop"])
def test_a_hang_is_recorded_stopped_and_restarted(tmp_path: Path, fault: str, capfd: pytest.CaptureFixture) -> None:
    assert watch(watched(tmp_path, fault)) == 0
    assert steps_logged(tmp_path) == [1, 2, 3, 4, 5]  # each step once, step 3 replayed by the second attempt
    (record,) = (tmp_path / "hangs").iterdir()
    stall = json.loads((record / "stall.json").read_text())
    assert (stall["phase"], stall["step"], stall["attempt"]) == ("update", 3, 1)
    # seen at the first poll past the limit (a loaded machine may run that poll late)
    assert FLOOR_S <= stall["seconds"] < FLOOR_S + 5 and stall["limit_s"] == FLOOR_S
    # the program and its helper: Python stacks of both, the hung function named in the program's
    assert stall["processes"] == 2 and stall["python_stacks_read"] == 2
    stacks = {path.name.split("-")[0]: path.read_text() for path in (record / "stacks").iterdir()}
    assert len(stacks) == 2 and any("hang_in_update" in text for text in stacks.values())
    tree = (record / "processes.txt").read_text()
    assert ("stopped" in tree) == (fault == "sigstop")
    assert json.loads((record / "progress.json").read_text())["phase"] == "update"
    assert [event["event"] for event in events(tmp_path)] == ["restart", "end"]
    err = capfd.readouterr().err
    assert "step 3 stalled in update for" in err and f"the stacks of every process: {record}" in err
    # half way to the limit the wait was said once, with what the run waits for, before the stall
    notice = f"; a stall at {FLOOR_S:.0f} s): waiting for the FSDP actor worker's update and its collectives"
    assert err.count("step 3 has been in update for") == 1 and notice in err, err
    assert err.index("step 3 has been in update for") < err.index(notice) < err.index("step 3 stalled in update")
    assert "restarting from global_step_2" in err
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(tmp_path) in " ".join(p.info["cmdline"] or [])]


def test_a_crash_is_restarted(tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    assert watch(watched(tmp_path, "exit")) == 0
    assert steps_logged(tmp_path) == [1, 2, 3, 4, 5]
    assert not (tmp_path / "hangs").exists()
    assert "the run ended with exit status 1 in update at step 3; restarting from global_step_2" in capfd.readouterr().err


def test_a_failure_that_repeats_ends_with_its_own_status(tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    assert watch(watched(tmp_path, "sleep", attempts=99, max_restarts=1)) == REPEATED_FAILURE_EXIT
    assert steps_logged(tmp_path) == [1, 2]
    assert len(list((tmp_path / "hangs").iterdir())) == 2  # the first attempt and its one restart
    assert [event["event"] for event in events(tmp_path)] == ["restart", "gave up"]
    last = capfd.readouterr().err.strip().splitlines()[-1]
    assert "1 restart(s) in a row did not move the run past global_step_2" in last
    assert "it keeps stopping in update" in last and f"exit status {REPEATED_FAILURE_EXIT}" in last


def test_a_failure_that_repeats_before_any_checkpoint_says_so(tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    assert watch(watched(tmp_path, "sleep", step=1, attempts=99, max_restarts=1)) == REPEATED_FAILURE_EXIT
    assert not (tmp_path / "checkpoints" / "metrics.jsonl").exists()
    assert len(list((tmp_path / "hangs").iterdir())) == 2
    last = capfd.readouterr().err.strip().splitlines()[-1]
    assert "1 restart(s) in a row did not move the run past no checkpoint" in last
    assert "it keeps stopping in update" in last


def test_no_restart_when_max_restarts_is_0(tmp_path: Path) -> None:
    """A crash keeps its own status; a stall ends with the watchdog's, after its record."""
    assert watch(watched(tmp_path / "crash", "exit", max_restarts=0)) == 1
    assert steps_logged(tmp_path / "crash") == [1, 2]
    assert watch(watched(tmp_path / "hang", "sleep", max_restarts=0)) == REPEATED_FAILURE_EXIT
    assert steps_logged(tmp_path / "hang") == [1, 2] and len(list((tmp_path / "hang" / "hangs").iterdir())) == 1


def test_a_save_still_writing_is_no_stall(tmp_path: Path) -> None:
    assert watch(watched(tmp_path, "slow_save")) == 0
    assert steps_logged(tmp_path) == [1, 2, 3, 4, 5]
    assert not (tmp_path / "hangs").exists()


def test_a_stop_asked_for_is_handed_on_and_nothing_restarts(tmp_path: Path) -> None:
    """SIGTERM to the watchdog reaches the attempt (here stuck in its update, which SIGTERM ends) and ends the run."""
    hung = tmp_path / "progress.json"

    def stop_once_hung() -> None:
        while not (hung.is_file() and '"update"' in hung.read_text() and '"step": 3' in hung.read_text()):
            time.sleep(0.05)
        signal.raise_signal(signal.SIGTERM)

    previous = signal.getsignal(signal.SIGTERM)
    stopper = threading.Thread(target=stop_once_hung, daemon=True)
    stopper.start()
    try:
        assert watch(watched(tmp_path, "sleep")) == 128 + signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert steps_logged(tmp_path) == [1, 2]
    assert not (tmp_path / "hangs").exists()
    assert [event["event"] for event in events(tmp_path)] == ["end"]


def test_the_watchdog_imports_no_framework() -> None:
    """A hung trainer cannot hold the watchdog: it loads none of verl, Ray, vLLM or torch."""
    code = (
        "import sys, medical_team.watchdog.supervisor, medical_team.launcher.watched_run\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'verl', 'ray', 'vllm', 'torch'}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "[]"


def test_an_attempt_ends_when_its_watchdog_is_killed(tmp_path: Path) -> None:
    """A SIGKILLed watchdog leaves no run going on unwatched: its attempt gets SIGTERM (as after `docker stop`)."""
    code = (
        "import sys; from pathlib import Path; from medical_team.watchdog.supervisor import WatchedRun, watch; "
        "from medical_team.run.settings import WatchdogSettings; "
        f"settings = WatchdogSettings(**{SETTINGS.__dict__!r}); "
        f"sys.exit(watch(WatchedRun({watched(tmp_path, 'sleep', step=2).command!r}, Path({str(tmp_path)!r}), "
        f"Path({str(tmp_path / 'checkpoints')!r}), {str(tmp_path)!r}, settings)))"
    )
    watchdog = subprocess.Popen([sys.executable, "-c", code])
    progress = tmp_path / "progress.json"
    while not (progress.is_file() and '"update"' in progress.read_text() and '"step": 2' in progress.read_text()):
        assert watchdog.poll() is None
        time.sleep(0.05)
    attempt = next(p for p in psutil.Process(watchdog.pid).children() if str(PROGRAM) in " ".join(p.cmdline()))
    watchdog.kill()
    watchdog.wait()
    attempt.wait(timeout=30)  # psutil.TimeoutExpired, and the test fails, while the attempt runs on
    assert not attempt.is_running()
