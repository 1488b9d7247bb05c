"""The trainer's per-step resource record, read for real in this process (medical_team/task_runner/resource_record.py).

A fresh process stands in for a run's launcher: it holds the output folder's lock, so the record's roots are that
process and what runs under it (no Ray node: it is no Ray worker). Real runs stopped at a floor:
tests/e2e/test_resource_floors_cpu.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from medical_team.task_runner.resource_record import LARGEST_PARTS, existing_folder

EVERY_STEP = {
    "resources/host_memory_available_mib",
    "resources/host_memory_floor_mib",
    "resources/run_rss_mib",
    "resources/shm_used_mib",
    "resources/shm_free_mib",
    "resources/disk_free_mib",
    "resources/disk_floor_mib",
}


# A fresh process stands in for the launcher: it holds the output folder's lock and starts one child, so its tree is
# known whatever this test process started before (an xdist worker may hold a private Ray with TransferQueue).
_OBSERVE = """
import json, os, subprocess, sys
from pathlib import Path
from medical_team.run.settings import ResourceSettings
from medical_team.run_folder.run_lock import hold_run_lock
from medical_team.task_runner.resource_record import ResourceRecord
output, memory_floor, disk_floor, step = Path(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
hold_run_lock(output)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
try:
    record = ResourceRecord(ResourceSettings(memory_floor, disk_floor, 2), output / "checkpoints", output)
    metrics, stop = record.observe(step, last_step=10)
    print(json.dumps({"roots_are_this_process": record.roots == [os.getpid()], "metrics": metrics, "stop": stop}))
finally:
    child.kill()
    child.wait()
"""


def observe(output: Path, memory_floor: float, disk_floor_gib: float, step: int) -> dict[str, Any]:
    """One step's record read by a fresh process that holds `output` as `medplay train` does."""
    done = subprocess.run(
        [sys.executable, "-c", _OBSERVE, str(output), str(memory_floor), str(disk_floor_gib), str(step)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return json.loads(done.stdout)


def test_each_step_records_memory_the_runs_largest_parts_shm_and_the_volume(tmp_path: Path) -> None:
    seen = observe(tmp_path, 0.1, 0.0, 1)
    metrics, stop = seen["metrics"], seen["stop"]
    assert seen["roots_are_this_process"] and stop is None
    parts = {key for key in metrics if key.startswith("resources/rss_mib/")}
    assert set(metrics) == EVERY_STEP | parts
    assert parts == {"resources/rss_mib/other"}  # a Python process and its child: no part of a run has a name here
    assert len(parts) <= LARGEST_PARTS
    assert metrics["resources/run_rss_mib"] == metrics["resources/rss_mib/other"] > 10
    assert metrics["resources/disk_floor_mib"] == 0.0
    assert 0 < metrics["resources/host_memory_floor_mib"] < metrics["resources/host_memory_available_mib"]
    assert metrics["resources/disk_free_mib"] > 0 and metrics["resources/shm_free_mib"] > 0


def test_at_a_floor_the_record_gives_the_line_the_run_ends_with(tmp_path: Path) -> None:
    # a floor of the whole memory and one far above any disk: both are reached at once
    seen = observe(tmp_path, 1.0, 10.0**6, 3)
    metrics, stop = seen["metrics"], seen["stop"]
    assert stop is not None and stop.startswith("step 3: host memory available ")
    assert "medplay.resources.host_memory_floor=1 (" in stop and "the run's largest parts: other " in stop
    # the checkpoint folder does not exist yet: its volume is read through the output folder
    assert f"the checkpoint volume ({tmp_path}) has " in stop and "medplay.resources.disk_floor_gib=1e+06" in stop
    assert stop.endswith(
        f"checkpoint {tmp_path / 'checkpoints' / 'global_step_3'} saved: then resume "
        "(trainer.resume_mode=auto resumes from it)"
    )
    assert metrics["resources/disk_floor_mib"] == 10.0**6 * 1024


def test_a_folder_not_made_yet_is_read_through_its_nearest_parent(tmp_path: Path) -> None:
    assert existing_folder(tmp_path / "a" / "b") == tmp_path
    assert existing_folder(tmp_path) == tmp_path
