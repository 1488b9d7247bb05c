"""The trainer's per-step resource record, read for real in this process (medical_team/task_runner/resource_record.py).

This process stands in for a run's launcher: it holds the output folder's lock, so the record's roots are this
process and what runs under it (no Ray node: it is no Ray worker). Real runs stopped at a floor:
tests/e2e/test_resource_floors_cpu.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from medical_team.run.settings import ResourceSettings
from medical_team.run_lock import hold_run_lock, release_run_lock
from medical_team.task_runner.resource_record import LARGEST_PARTS, ResourceRecord, existing_folder

EVERY_STEP = {
    "resources/host_memory_available_mib",
    "resources/host_memory_floor_mib",
    "resources/run_rss_mib",
    "resources/shm_used_mib",
    "resources/shm_free_mib",
    "resources/disk_free_mib",
    "resources/disk_floor_mib",
}


@pytest.fixture()
def output(tmp_path: Path) -> Iterator[Path]:
    """An output folder this process holds, as `medplay train` does, with a child process under it."""
    hold_run_lock(tmp_path)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield tmp_path
    finally:
        child.kill()
        child.wait()
        release_run_lock(tmp_path)


def test_each_step_records_memory_the_runs_largest_parts_shm_and_the_volume(output: Path) -> None:
    record = ResourceRecord(ResourceSettings(0.1, 0.0, 2), output / "checkpoints", output)
    assert record.roots == [os.getpid()]
    metrics, stop = record.observe(1, last_step=10)
    assert stop is None
    parts = {key for key in metrics if key.startswith("resources/rss_mib/")}
    assert set(metrics) == EVERY_STEP | parts
    assert parts == {"resources/rss_mib/other"}  # pytest and its child: no part of a run has a name here
    assert len(parts) <= LARGEST_PARTS
    assert metrics["resources/run_rss_mib"] == metrics["resources/rss_mib/other"] > 10
    assert metrics["resources/disk_floor_mib"] == 0.0
    assert 0 < metrics["resources/host_memory_floor_mib"] < metrics["resources/host_memory_available_mib"]
    assert metrics["resources/disk_free_mib"] > 0 and metrics["resources/shm_free_mib"] > 0


def test_at_a_floor_the_record_gives_the_line_the_run_ends_with(output: Path) -> None:
    # a floor of the whole memory and one far above any disk: both are reached at once
    record = ResourceRecord(ResourceSettings(1.0, 10.0**6, 2), output / "checkpoints", output)
    metrics, stop = record.observe(3, last_step=10)
    assert stop is not None and stop.startswith("step 3: host memory available ")
    assert "medplay.resources.host_memory_floor=1 (" in stop and "the run's largest parts: other " in stop
    # the checkpoint folder does not exist yet: its volume is read through the output folder
    assert f"the checkpoint volume ({output}) has " in stop and "medplay.resources.disk_floor_gib=1e+06" in stop
    assert stop.endswith(
        f"checkpoint {output / 'checkpoints' / 'global_step_3'} saved: then resume "
        "(trainer.resume_mode=auto resumes from it)"
    )
    assert metrics["resources/disk_floor_mib"] == 10.0**6 * 1024


def test_a_folder_not_made_yet_is_read_through_its_nearest_parent(tmp_path: Path) -> None:
    assert existing_folder(tmp_path / "a" / "b") == tmp_path
    assert existing_folder(tmp_path) == tmp_path
