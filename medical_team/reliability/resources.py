"""What a run uses up as it goes (host memory, `/dev/shm`, the checkpoint volume's free space) and its trend.

The trainer reads them once a step (medical_team/task_runner/resource_record.py: its `resources/...` metrics) and
`ResourceWatch` (resource_watch.py) judges them: at a floor the run stops with a checkpoint, and a falling trend
is forecast. The trend is a least-squares line (`slope`, `floor_step`), the one fit medplay has: the soak benchmark
fits its series with it too. No verl, Ray or vLLM here.

Host memory is what Ray's memory monitor watches: the host's total and available memory (`MemAvailable`), or, in a
container whose cgroup limit is below the host's memory, that limit and what the cgroup has left under it (its
usage less its page cache, as Ray counts it).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

MIB = 1024 * 1024
GIB = 1024 * MIB
SHM = Path("/dev/shm")
CGROUP = Path("/sys/fs/cgroup")
# cgroup v2's files, then v1's: the limit, the usage, the statistics and their page-cache keys (Ray's choice).
_CGROUP_V2 = ("memory.max", "memory.current", "memory.stat", ("inactive_file", "active_file"))
_CGROUP_V1 = (
    "memory/memory.limit_in_bytes",
    "memory/memory.usage_in_bytes",
    "memory/memory.stat",
    ("total_inactive_file", "total_active_file"),
)


def line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """The least-squares line of `ys` over `xs`: (slope, intercept); at least two distinct xs."""
    if len(xs) != len(ys) or len(set(xs)) < 2:
        raise ValueError(f"a line needs two or more distinct x values and a y for each x; got {len(xs)} x, {len(ys)} y")
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    rise = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    gradient = rise / spread
    return gradient, mean_y - gradient * mean_x


def slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The least-squares slope of `ys` over `xs` (y's unit per unit of x: MiB a step, seconds a step, ...)."""
    return line(xs, ys)[0]


def floor_step(xs: Sequence[float], ys: Sequence[float], floor: float) -> float | None:
    """The x at which the least-squares line of `ys` over `xs` falls to `floor`; None when the line does not fall."""
    gradient, intercept = line(xs, ys)
    if gradient >= 0:
        return None
    return (floor - intercept) / gradient


@dataclass(frozen=True)
class HostMemory:
    """The memory the run's host (or its container's cgroup) has, and how much of it is still available, in bytes."""

    total: int
    available: int


def _cgroup_limit_and_used(root: Path) -> tuple[int, int] | None:
    """(limit, used) of this process's memory cgroup, used without page cache; None without a cgroup or a limit."""
    for limit_name, usage_name, stat_name, cache_keys in (_CGROUP_V2, _CGROUP_V1):
        try:
            limit_text = (root / limit_name).read_text().strip()
            usage = int((root / usage_name).read_text().split()[0])
            stats = dict(entry.split() for entry in (root / stat_name).read_text().splitlines() if entry.strip())
        except (OSError, ValueError, IndexError):
            continue
        if not limit_text.isdigit():  # "max": no limit
            return None
        cache = sum(int(stats.get(key, 0)) for key in cache_keys)
        return int(limit_text), max(0, usage - cache)
    return None


def host_memory(cgroup: Path = CGROUP) -> HostMemory:
    """The host's memory and what is available, or the cgroup's limit and what is left under it when that is lower."""
    memory = psutil.virtual_memory()
    total, available = int(memory.total), int(memory.available)
    limited = _cgroup_limit_and_used(cgroup)
    if limited is not None and limited[0] < total:
        limit, used = limited
        total, available = limit, min(available, max(0, limit - used))
    return HostMemory(total, available)


@dataclass(frozen=True)
class DiskSpace:
    """A filesystem's used and free bytes (free: what an unprivileged writer can still use)."""

    used: int
    free: int


def disk_space(folder: Path) -> DiskSpace:
    """The used and free bytes of the filesystem that holds `folder`."""
    usage = shutil.disk_usage(folder)
    return DiskSpace(int(usage.used), int(usage.free))
