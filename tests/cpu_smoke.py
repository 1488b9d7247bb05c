"""Helpers for end-to-end tests that run `medplay train profile=cpu-smoke` through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

MEDPLAY = str(Path(sys.executable).with_name("medplay"))
# A hang guard, not a speed target (a failed weight sync makes verl hang instead of exiting): start-up has taken
# 292 s on CI's 2 cores beside another run, a step up to 64 s; the guard leaves twice that.
START_UP_ALLOWANCE_S = 600
STEP_ALLOWANCE_S = 60
# The guard of a run of up to 3 steps (most tests').
TRAIN_TIMEOUT_S = START_UP_ALLOWANCE_S + 3 * STEP_ALLOWANCE_S
# The tests share a machine with other work: a host memory floor (medplay.resources.host_memory_floor) that other
# processes' memory reached would stop a run by chance. Off unless a test sets it
# (tests/e2e/test_resource_floors_cpu.py).
MEMORY_FLOOR = "medplay.resources.host_memory_floor"
# A test of how one attempt ends sees that attempt's own exit status: the watchdog restarts nothing unless a test sets
# it (tests/e2e/test_faults_cpu.py).
MAX_RESTARTS = "medplay.watchdog.max_restarts"


def train_timeout_s(steps: int) -> int:
    """The hang guard of a run of `steps` steps: a slow, shared machine meets it with room to spare."""
    return START_UP_ALLOWANCE_S + max(steps, 3) * STEP_ALLOWANCE_S


def convert(data_dir: Path) -> None:
    """`medplay convert --output data_dir`: the bundled MEDEC data as verl parquet files."""
    subprocess.run([MEDPLAY, "convert", "--output", str(data_dir)], check=True, capture_output=True, timeout=300)


def train_command(root: Path, steps: int, *overrides: str) -> list[str]:
    """`medplay train profile=cpu-smoke` into `root`, under a hard timeout (a failed weight sync hangs verl), without a
    host memory floor or the watchdog's restarts unless `overrides` set them."""
    defaults = [
        f"{key}=0" for key in (MEMORY_FLOOR, MAX_RESTARTS) if not any(item.startswith(f"{key}=") for item in overrides)
    ]
    return [
        "timeout",
        "--kill-after=30",  # SIGTERM asks the trainer to save and stop; SIGKILL if it cannot
        str(train_timeout_s(steps)),
        MEDPLAY,
        "train",
        "profile=cpu-smoke",
        f"medplay.output_dir={root}",
        f"medplay.data_dir={root / 'data'}",
        f"trainer.total_training_steps={steps}",
        *defaults,
        *overrides,
    ]


def train(
    root: Path, steps: int, *overrides: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a training to the end (in `env`, default this process's environment) and require exit status 0."""
    command = train_command(root, steps, *overrides)
    result = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    return result


def metrics_by_step(root: Path) -> dict[int, dict[str, float]]:
    """The metrics file's records by step (the last record of a step wins)."""
    lines = (root / "checkpoints" / "metrics.jsonl").read_text().splitlines()
    return {record["step"]: record["data"] for record in map(json.loads, filter(None, lines))}


def full_log(console: str) -> str:
    """The run log that `medplay train` named on its console (`log: PATH`)."""
    paths = [line.removeprefix("log: ") for line in console.splitlines() if line.startswith("log: ")]
    assert len(paths) == 1, console[-3000:]
    return Path(paths[0]).read_text()
