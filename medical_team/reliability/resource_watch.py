"""A run's floors and forecast: from each step's readings, whether host memory or disk is at its floor, and when the
trend says it will be.

At a floor the trainer saves a checkpoint and stops the run (medical_team/task_runner/resource_record.py) before
something else ends it without one: Ray's memory monitor kills a worker once more than 95 % of host memory is used
(`RAY_memory_usage_threshold`, 0.95 by default), and a full checkpoint volume fails the next save. The forecast is
the step at which the least-squares line over the last `trend_steps` readings reaches the floor, given when that step
comes before the run's last; it waits until `2 × trend_steps` steps have been read, the first `trend_steps` being the
warm-up (vLLM's and the allocators' caches filling) whose growth is no trend.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from medical_team.reliability.resources import GIB, MIB, HostMemory, floor_step

# Ray's memory monitor kills a worker when more than this share of memory is used (RAY_memory_usage_threshold).
RAY_KILL_USED_FRACTION = 0.95
MEMORY_FLOOR_KEY = "medplay.resources.host_memory_floor"
DISK_FLOOR_KEY = "medplay.resources.disk_floor_gib"
RESUME = "then resume (trainer.resume_mode=auto resumes from it)"


class Resource(str, Enum):
    """A resource with a floor; its value names its metrics (`resources/<value>_floor_step`)."""

    HOST_MEMORY = "host_memory"
    DISK = "disk"

    @property
    def words(self) -> str:
        """How the console names it."""
        return "host memory" if self is Resource.HOST_MEMORY else "the checkpoint volume's free space"


def floor_step_metric(resource: Resource) -> str:
    """The metric that holds the step at which `resource` is forecast to reach its floor."""
    return f"resources/{resource.value}_floor_step"


def size_text(size: float) -> str:
    """`1.5 GiB`, or `12 MiB` under a GiB."""
    return f"{size / GIB:.1f} GiB" if size >= GIB else f"{size / MIB:.0f} MiB"


@dataclass(frozen=True)
class Floors:
    """Where a run stops: host memory available under `memory_fraction` of its total, free disk under `disk_bytes`.

    0 turns a floor off.
    """

    memory_fraction: float
    disk_bytes: int

    def memory_bytes(self, memory: HostMemory) -> int:
        """The host memory floor in bytes for a host of this total."""
        return int(self.memory_fraction * memory.total)


@dataclass(frozen=True)
class Reading:
    """One step's readings of the resources with floors."""

    step: int
    memory: HostMemory
    disk_free: int  # bytes free on the checkpoint folder's volume


@dataclass(frozen=True)
class Verdict:
    """What one step's readings say: the forecast metrics, and the resources at their floor."""

    metrics: dict[str, float]
    reached: tuple[Resource, ...]


class ResourceWatch:
    """Judges each step's readings against the floors, and forecasts from the last `trend_steps` of them."""

    def __init__(self, floors: Floors, trend_steps: int) -> None:
        self.floors = floors
        self.trend_steps = trend_steps
        self._window: deque[Reading] = deque(maxlen=trend_steps)
        self._seen = 0

    def observe(self, reading: Reading, last_step: int) -> Verdict:
        """Add one step's readings; the forecast (steps before `last_step` only) and the floors reached."""
        self._window.append(reading)
        self._seen += 1
        values = {
            Resource.HOST_MEMORY: (reading.memory.available, self.floors.memory_bytes(reading.memory)),
            Resource.DISK: (reading.disk_free, self.floors.disk_bytes),
        }
        reached = tuple(resource for resource, (value, floor) in values.items() if floor > 0 and value < floor)
        metrics = {}
        for resource, (_, floor) in values.items():
            step = self._forecast(resource, floor, reading.step) if floor > 0 and resource not in reached else None
            if step is not None and step <= last_step:
                metrics[floor_step_metric(resource)] = float(step)
        return Verdict(metrics, reached)

    def _forecast(self, resource: Resource, floor: int, step: int) -> int | None:
        """The first step after `step` at which the window's trend reaches `floor`; None before the warm-up ends."""
        steps = [float(reading.step) for reading in self._window]
        if self._seen < 2 * self.trend_steps or len(set(steps)) < 2:
            return None
        if resource is Resource.HOST_MEMORY:
            values = [float(reading.memory.available) for reading in self._window]
        else:
            values = [float(reading.disk_free) for reading in self._window]
        at = floor_step(steps, values, float(floor))
        return None if at is None else max(step + 1, math.ceil(at))


def floor_message(
    resources: tuple[Resource, ...],
    reading: Reading,
    floors: Floors,
    volume: Path,
    checkpoint: Path,
    largest: Mapping[str, float],
) -> str:
    """The one line a run stopped at a floor ends with: each resource, its reading and floor, what to do."""
    parts = []
    if Resource.HOST_MEMORY in resources:
        memory = reading.memory
        parts_text = ", ".join(f"{kind} {size_text(mib * MIB)}" for kind, mib in largest.items())
        parts.append(
            f"host memory available {size_text(memory.available)} of {size_text(memory.total)} fell below its floor, "
            f"{MEMORY_FLOOR_KEY}={floors.memory_fraction:g} ({size_text(floors.memory_bytes(memory))}), set before "
            f"Ray's memory monitor kills a worker at {RAY_KILL_USED_FRACTION:.0%} used; the run's largest parts: "
            f"{parts_text or 'none found'}; free memory on this host (other processes share it) or lower "
            "data.train_batch_size and actor_rollout_ref.rollout.agent.num_workers"
        )
    if Resource.DISK in resources:
        parts.append(
            f"the checkpoint volume ({volume}) has {size_text(reading.disk_free)} free, below its floor "
            f"{DISK_FLOOR_KEY}={floors.disk_bytes / GIB:g} (room for one more checkpoint); free space there, mount a "
            "larger volume or keep fewer checkpoints (trainer.max_actor_ckpt_to_keep)"
        )
    return f"step {reading.step}: {'; '.join(parts)}; checkpoint {checkpoint} saved: {RESUME}"
