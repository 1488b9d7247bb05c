"""The trainer's per-step resource record: host memory, the run's processes, `/dev/shm` and the checkpoint volume as
`resources/...` metrics, judged against `medplay.resources`' floors (medical_team/reliability/resource_watch.py).

Every step's record gets, in MiB: `resources/host_memory_available_mib` and its floor
`resources/host_memory_floor_mib`, `resources/run_rss_mib` (every process of the run: medical_team/run/processes.py
finds them from the task runner) and `resources/rss_mib/<part>` for its three largest parts, `resources/shm_used_mib`
and `resources/shm_free_mib`, `resources/disk_free_mib` of the checkpoint folder's volume and its floor
`resources/disk_floor_mib`; and, when the trend says a floor comes before the run's last step,
`resources/host_memory_floor_step` or `resources/disk_floor_step`: the step it predicts.
"""

from __future__ import annotations

import os
from pathlib import Path

from medical_team.reliability.resource_watch import Floors, Reading, ResourceWatch, floor_message
from medical_team.reliability.resources import GIB, MIB, SHM, disk_space, host_memory
from medical_team.run.processes import rss_by_kind, run_roots, sample_processes
from medical_team.run.settings import ResourceSettings

LARGEST_PARTS = 3  # the run's parts whose RSS each step records


def existing_folder(path: Path) -> Path:
    """`path`, or its nearest parent that exists (a volume's free space is read through it)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


class ResourceRecord:
    """Reads the run's resources once a step (in the task runner's process) and says when a floor ends the run."""

    def __init__(self, settings: ResourceSettings, checkpoint_dir: Path, output_dir: Path) -> None:
        self.floors = Floors(settings.host_memory_floor, int(settings.disk_floor_gib * GIB))
        self.watch = ResourceWatch(self.floors, settings.trend_steps)
        self.checkpoint_dir = checkpoint_dir
        self.roots = run_roots(os.getpid(), output_dir)

    def observe(self, step: int, last_step: int) -> tuple[dict[str, float], str | None]:
        """This step's `resources/...` metrics, and at a floor the line the run ends with (None otherwise)."""
        memory = host_memory()
        volume = existing_folder(self.checkpoint_dir)
        disk = disk_space(volume)
        shm = disk_space(SHM) if SHM.is_dir() else None  # a host without /dev/shm records none
        parts = rss_by_kind(sample_processes(self.roots))
        largest = dict(list(parts.items())[:LARGEST_PARTS])
        reading = Reading(step, memory, disk.free)
        verdict = self.watch.observe(reading, last_step)
        metrics = {
            "resources/host_memory_available_mib": memory.available / MIB,
            "resources/host_memory_floor_mib": self.floors.memory_bytes(memory) / MIB,
            "resources/run_rss_mib": sum(parts.values()),
            **{f"resources/rss_mib/{kind}": mib for kind, mib in largest.items()},
            **({"resources/shm_used_mib": shm.used / MIB, "resources/shm_free_mib": shm.free / MIB} if shm else {}),
            "resources/disk_free_mib": disk.free / MIB,
            "resources/disk_floor_mib": self.floors.disk_bytes / MIB,
            **verdict.metrics,
        }
        if not verdict.reached:
            return metrics, None
        checkpoint = self.checkpoint_dir / f"global_step_{step}"
        return metrics, floor_message(verdict.reached, reading, self.floors, volume, checkpoint, largest)
