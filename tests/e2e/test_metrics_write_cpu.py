"""End to end: a metrics file that fills up mid-run ends `medplay train` with one line, the step uncommitted.

    PYTHONPATH=tests .venv/bin/python -m pytest -q -m long tests/e2e/test_metrics_write_cpu.py

`medplay train profile=cpu-smoke` (3 steps, a checkpoint each step) writes its metrics file on a tmpfs of 64 KiB
(`tests/tiny_filesystem.py`: only that file's disk fills; checkpoints, logs and Ray's files are written as usual).
The start-time disk plan sees room for the run's records there; then step 1's update waits on a file
(`MEDPLAY_INJECT_HOLD`, medical_team/plugin/step_hold.py) while the test fills the tmpfs to 8 KiB free (through
`/proc/PID/root`, the mount as the run sees it). Step 1's record (about 5.4 KB) fits in what is left; step 2's does
not: the write comes back short, then with ENOSPC.
The run must end there with its cause on the last line, step 1's record whole and nothing of step 2's, and the
tracker still at step 1, so a resume replays step 2. `long`: a real run costs minutes (docs/testing.md).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from cpu_smoke import convert, train_command, train_timeout_s
from tiny_filesystem import fill_leaving, on_tiny_filesystem, tiny_filesystem_unavailable

from medical_team.reliability.checkpoints import COMPLETE_MARKER, repair_tracker
from medical_team.run.phase_hold import HOLD_ENV
from medical_team.run_folder.checkpoint_folder import read_tracker

pytestmark = [pytest.mark.e2e, pytest.mark.long]

STEPS = 3
METRICS_FS = "64k"  # room for the disk plan's 3 x 8 KiB of records at the start
LEFT_FREE = 8 * 1024  # two pages once step 1 is held: one cpu-smoke record (about 5.4 KB) fits, two do not
FAILED_STEP = 2


@dataclass(frozen=True)
class FullRun:
    """The run folder, the metrics file as the run left it, and the run's exit status and stderr."""

    root: Path
    metrics: Path
    status: int
    stderr: str


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> FullRun:
    """Train with the metrics file on a filesystem with room for one step's record."""
    for reason in (None if shutil.which("timeout") else "needs coreutils `timeout`", tiny_filesystem_unavailable()):
        if reason:
            pytest.skip(reason)
    root = tmp_path_factory.mktemp("metrics-fs")
    convert(root / "data")
    mount, copy = root / "metrics-fs", root / "metrics-fs-copy"
    # The step's game records (games/ beside the metrics file) would take the tmpfs's room first: none here; their
    # own full-disk case is tests/task_runner/test_game_records_file.py.
    held, release = root / "held-step-1", root / "release-step-1"
    command = train_command(
        root,
        STEPS,
        f"medplay.metrics_file={mount / 'metrics.jsonl'}",
        "medplay.report.games_per_step=0",
        f"+ray_kwargs.ray_init.runtime_env.env_vars.{HOLD_ENV}=update_actor@1:{held}:{release}",
    )
    stderr = root / "stderr.txt"  # a file, not a pipe: the run must never wait on a reader while the test polls
    with stderr.open("w") as stderr_file:
        run = subprocess.Popen(
            on_tiny_filesystem(METRICS_FS, mount, copy, command), cwd=root, stdout=subprocess.DEVNULL, stderr=stderr_file
        )
    deadline = time.monotonic() + train_timeout_s(STEPS)
    while run.poll() is None and time.monotonic() < deadline and not held.exists():
        time.sleep(0.1)
    if run.poll() is None and held.exists():
        fill_leaving(run.pid, mount, LEFT_FREE)
        release.touch()
    run.wait(timeout=train_timeout_s(STEPS))
    return FullRun(root, copy / "metrics.jsonl", run.returncode, stderr.read_text())


def test_the_run_ends_with_the_cause_on_one_line(full_run: FullRun) -> None:
    metrics = full_run.root / "metrics-fs" / "metrics.jsonl"
    assert full_run.status == 1, full_run.stderr[-6000:]
    last = full_run.stderr.splitlines()[-1]
    assert last.startswith(
        f"medplay train: stopped: step {FAILED_STEP}'s metrics could not be written to {metrics} ([Errno 28] No space "
        "left on device after "
    ), full_run.stderr[-6000:]
    assert "so the step was not committed: the checkpoint tracker still names the checkpoint before it" in last


def test_the_metrics_file_holds_step_1_whole_and_nothing_of_step_2(full_run: FullRun) -> None:
    text = full_run.metrics.read_text()
    assert text.endswith("\n"), "a piece of a record was left"
    assert [json.loads(line)["step"] for line in text.splitlines()] == [1]


def test_the_tracker_stays_at_the_step_before_and_a_resume_replays_the_failed_step(full_run: FullRun) -> None:
    checkpoints = full_run.root / "checkpoints"
    assert read_tracker(checkpoints) == FAILED_STEP - 1
    assert (checkpoints / f"global_step_{FAILED_STEP - 1}" / COMPLETE_MARKER).is_file()
    assert (checkpoints / f"global_step_{FAILED_STEP}").is_dir()  # saved before its metrics were logged
    assert not (checkpoints / f"global_step_{FAILED_STEP}" / COMPLETE_MARKER).exists()
    report = repair_tracker(checkpoints, trust_unverified=False)
    assert (report.resume_step, report.torn_steps, report.damaged) == (FAILED_STEP - 1, [FAILED_STEP], {})
