"""A real process that plays one attempt of a run for the watchdog's tests (tests/watchdog/test_supervisor.py).

    python tests/watchdog/attempt_program.py OUTPUT STEPS FAULT STEP ATTEMPTS

It resumes after the step its checkpoint tracker names, and for each step marks the phases in the real progress
record (medical_team/run/progress_record.py), appends the step's metrics line, makes its `global_step_N` folder and moves the
tracker: what the watchdog reads of a real run. A helper process beside it stands for a worker. At step STEP, in the
first ATTEMPTS attempts, FAULT happens in the update: `sleep` (the update never returns), `sigstop` (the helper is
stopped and the update waits on it), `exit` (the attempt exits 1), or in the save: `slow_save` (the step folder grows
a byte every 0.5 s for 12 s: a save still writing).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from medical_team.launcher.watched_run import end_with_watchdog
from medical_team.run.progress_record import ProgressWriter, progress_path
from medical_team.run_folder.checkpoint_folder import TRACKER_NAME, read_tracker

PHASES = ("generation", "update", "checkpoint_save", "metrics")
SLOW_SAVE_S = 12.0


def hang_in_update(helper: subprocess.Popen, fault: str) -> None:
    """The update that never returns: asleep, or waiting on a stopped helper."""
    if fault == "sigstop":
        os.kill(helper.pid, signal.SIGSTOP)
        helper.wait()
    time.sleep(3600)


def slow_save(folder: Path) -> None:
    """A save that keeps writing for SLOW_SAVE_S."""
    folder.mkdir(parents=True, exist_ok=True)
    ends = time.monotonic() + SLOW_SAVE_S
    with (folder / "weights.bin").open("ab") as weights:
        while time.monotonic() < ends:
            weights.write(b"x")
            weights.flush()
            time.sleep(0.5)


def main(output: Path, steps: int, fault: str, fault_step: int, fault_attempts: int) -> int:
    end_with_watchdog()  # as `medplay train` does in an attempt
    attempt = int(os.environ["MEDPLAY_WATCHDOG_ATTEMPT"])
    checkpoints = output / "checkpoints"
    checkpoints.mkdir(parents=True, exist_ok=True)
    writer = ProgressWriter(progress_path(output), attempt=attempt)  # as the launcher begins its record
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    faulty = attempt <= fault_attempts
    try:
        for step in range((read_tracker(checkpoints) or 0) + 1, steps + 1):
            for phase in PHASES:
                writer.enter(phase, step)
                if faulty and step == fault_step and phase == "update":
                    if fault == "exit":
                        return 1
                    if fault in ("sleep", "sigstop"):
                        hang_in_update(helper, fault)
                if faulty and step == fault_step and phase == "checkpoint_save" and fault == "slow_save":
                    slow_save(checkpoints / f"global_step_{step}")
                time.sleep(0.05)
            (checkpoints / f"global_step_{step}").mkdir(exist_ok=True)
            with (checkpoints / "metrics.jsonl").open("a") as metrics:
                metrics.write(json.dumps({"step": step, "attempt": attempt}) + "\n")
            (checkpoints / TRACKER_NAME).write_text(str(step))
    finally:
        helper.kill()
    return 0


if __name__ == "__main__":
    output, steps, fault, fault_step, fault_attempts = sys.argv[1:6]
    sys.exit(main(Path(output), int(steps), fault, int(fault_step), int(fault_attempts)))
