"""End to end: a metrics file that fills up mid-run ends `medplay train` with one line, the step uncommitted.

    PYTHONPATH=tests .venv/bin/python -m pytest -q -m long tests/e2e/test_metrics_write_cpu.py

`medplay train profile=cpu-smoke` (3 steps, a checkpoint each step) writes its metrics file on a tmpfs of 8 KiB
(`tests/tiny_filesystem.py`: only that file's disk is full; checkpoints, logs and Ray's files are written as
usual). Step 1's record (about 5.4 KB) fits; step 2's does not: the write comes back short, then with ENOSPC.
The run must end there with its cause on the last line, step 1's record whole and nothing of step 2's, and the
tracker still at step 1, so a resume replays step 2. `long`: a real run costs minutes (docs/testing.md).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from cpu_smoke import convert, train_command
from tiny_filesystem import on_tiny_filesystem, tiny_filesystem_unavailable

from medical_team.checkpoint_folder import read_tracker
from medical_team.reliability.checkpoints import COMPLETE_MARKER, repair_tracker

pytestmark = [pytest.mark.e2e, pytest.mark.long]

STEPS = 3
METRICS_FS = "8k"  # two pages: one cpu-smoke record (about 5.4 KB) fits, two do not
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
    command = train_command(
        root, STEPS, f"medplay.metrics_file={mount / 'metrics.jsonl'}", "medplay.report.games_per_step=0"
    )
    result = subprocess.run(
        on_tiny_filesystem(METRICS_FS, mount, copy, command), cwd=root, capture_output=True, text=True, check=False
    )
    return FullRun(root, copy / "metrics.jsonl", result.returncode, result.stderr)


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
