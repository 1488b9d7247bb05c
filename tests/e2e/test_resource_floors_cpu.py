"""End to end: a run whose host memory or checkpoint volume reaches its floor saves a checkpoint and stops, status 6.

    PYTHONPATH=tests .venv/bin/python -m pytest -q -m long tests/e2e/test_resource_floors_cpu.py

Two real `medplay train profile=cpu-smoke` runs, with no checkpoint of verl's own (`trainer.save_freq=-1`), so the
one left is the stop's:
- memory: `medplay.resources.host_memory_floor=1`, a floor of the whole memory, which the available memory is always
  below: the run stops after step 1.
- disk: the checkpoint folder (and the metrics file in it) on a 64 MiB tmpfs in a private mount namespace
  (`tests/tiny_filesystem.py`), `medplay.resources.disk_floor_gib=0.03` (about 31 MiB). Once step 1's record is on
  the tmpfs, the test fills it to 20 MiB free (through `/proc/PID/root`, the mount as the run's processes see it):
  the first step that reads the volume after that stops the run, with its checkpoint (a few MiB) in the room left.
Each ends with exit status 6, one line naming the resource, and the tracker at its last step's checkpoint.
`long`: two real runs cost minutes (docs/testing.md).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from cpu_smoke import convert, metrics_by_step, train_command, train_timeout_s
from tiny_filesystem import fill_leaving, on_tiny_filesystem, seen_by, tiny_filesystem_unavailable

from medical_team.reliability.checkpoints import COMPLETE_MARKER
from medical_team.reliability.resources import MIB
from medical_team.run.failures import RESOURCE_FLOOR_EXIT
from medical_team.run_folder.checkpoint_folder import read_tracker

pytestmark = [pytest.mark.e2e, pytest.mark.long]

STEPS = 10  # more than either run takes: each ends at a floor
NO_SAVES = "trainer.save_freq=-1"
CHECKPOINT_FS = "64m"
DISK_FLOOR_GIB = 0.03
LEFT_FREE = 20 * MIB  # under the floor, over one checkpoint of the tiny model (about 2.3 MiB) and its records


@dataclass(frozen=True)
class StoppedRun:
    """A run that ended: its checkpoint folder, exit status and stderr."""

    checkpoints: Path
    status: int
    stderr: str

    @property
    def last_line(self) -> str:
        """The line the run ended with."""
        return self.stderr.strip().splitlines()[-1]

    def steps(self) -> dict[int, dict[str, float]]:
        """The metrics file's records by step."""
        return metrics_by_step(self.checkpoints.parent)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled MEDEC data as verl parquet files, shared by both runs."""
    if shutil.which("timeout") is None:
        pytest.skip("needs coreutils `timeout`")
    folder = tmp_path_factory.mktemp("floors-data")
    convert(folder)
    return folder


@pytest.fixture(scope="module")
def memory_run(tmp_path_factory: pytest.TempPathFactory, data: Path) -> StoppedRun:
    """A run whose host memory floor is the whole memory."""
    root = tmp_path_factory.mktemp("memory-floor")
    floors = ("medplay.resources.host_memory_floor=1", "medplay.resources.disk_floor_gib=0")
    command = train_command(root, STEPS, f"medplay.data_dir={data}", NO_SAVES, *floors)
    result = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    return StoppedRun(root / "checkpoints", result.returncode, result.stderr)


def test_a_memory_floor_stops_the_run_after_step_1_with_its_checkpoint(memory_run: StoppedRun) -> None:
    assert memory_run.status == RESOURCE_FLOOR_EXIT, memory_run.stderr[-6000:]
    checkpoint = memory_run.checkpoints / "global_step_1"
    assert memory_run.last_line.startswith("medplay train: stopped: step 1: host memory available "), memory_run.stderr
    assert "medplay.resources.host_memory_floor=1 (" in memory_run.last_line
    assert "Ray's memory monitor kills a worker at 95% used; the run's largest parts: " in memory_run.last_line
    assert f"; checkpoint {checkpoint} saved: then resume (trainer.resume_mode=auto" in memory_run.last_line
    assert read_tracker(memory_run.checkpoints) == 1 and (checkpoint / COMPLETE_MARKER).is_file()
    (record,) = memory_run.steps().values()
    assert record["resources/host_memory_available_mib"] < record["resources/host_memory_floor_mib"]


@pytest.fixture(scope="module")
def disk_run(tmp_path_factory: pytest.TempPathFactory, data: Path) -> StoppedRun:
    """A run whose checkpoint volume the test fills once step 1's record is on it."""
    reason = tiny_filesystem_unavailable()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("disk-floor")
    mount, copy = root / "checkpoint-fs", root / "checkpoint-fs-copy"
    floors = ("medplay.resources.host_memory_floor=0", f"medplay.resources.disk_floor_gib={DISK_FLOOR_GIB}")
    command = train_command(
        root, STEPS, f"medplay.data_dir={data}", f"trainer.default_local_dir={mount / 'checkpoints'}", NO_SAVES, *floors
    )
    stderr = root / "stderr.txt"  # a file, not a pipe: the run must never wait on a reader while the test polls
    with stderr.open("w") as stderr_file:
        run = subprocess.Popen(
            on_tiny_filesystem(CHECKPOINT_FS, mount, copy, command),
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=stderr_file,
        )
    seen = seen_by(run.pid, mount)
    deadline = time.monotonic() + train_timeout_s(STEPS)
    while run.poll() is None and time.monotonic() < deadline and not _holds_step(seen / "checkpoints", 1):
        time.sleep(0.1)
    if run.poll() is None:
        fill_leaving(run.pid, mount, LEFT_FREE)
    run.wait(timeout=train_timeout_s(STEPS))
    return StoppedRun(copy / "checkpoints", run.returncode, stderr.read_text())


def _holds_step(checkpoints: Path, step: int) -> bool:
    """Whether the metrics file in `checkpoints` holds a whole record of `step`."""
    try:
        lines = (checkpoints / "metrics.jsonl").read_text().splitlines(keepends=True)
    except OSError:
        return False
    return any(line.endswith("\n") and json.loads(line)["step"] == step for line in lines)


def test_a_volume_filled_during_the_run_stops_it_at_the_next_step_with_its_checkpoint(disk_run: StoppedRun) -> None:
    assert disk_run.status == RESOURCE_FLOOR_EXIT, disk_run.stderr[-6000:]
    steps = disk_run.steps()
    last = max(steps)
    floor_mib = DISK_FLOOR_GIB * 1024
    # every step before the last read the volume above its floor; the last one under it, then the run stopped
    assert [step for step, data in steps.items() if data["resources/disk_free_mib"] < floor_mib] == [last]
    assert 1 < last < STEPS and sorted(steps) == list(range(1, last + 1))
    mount = disk_run.checkpoints.parent.with_name("checkpoint-fs")
    assert disk_run.last_line.startswith(
        f"medplay train: stopped: step {last}: the checkpoint volume ({mount / 'checkpoints'}) has "
    ), disk_run.stderr[-6000:]
    assert f"below its floor medplay.resources.disk_floor_gib={DISK_FLOOR_GIB}" in disk_run.last_line
    assert f"checkpoint {mount / 'checkpoints' / f'global_step_{last}'} saved" in disk_run.last_line
    assert read_tracker(disk_run.checkpoints) == last
    assert (disk_run.checkpoints / f"global_step_{last}" / COMPLETE_MARKER).is_file()
    assert not any((disk_run.checkpoints / f"global_step_{step}").exists() for step in range(1, last))
