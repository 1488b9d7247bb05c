"""The trend fit and the resources read each step (medical_team/reliability/resources.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import psutil
import pytest

from medical_team.reliability.resources import MIB, disk_space, floor_step, host_memory, line, slope


def test_the_least_squares_line_of_exact_points() -> None:
    assert line([1, 2, 3, 4], [10, 8, 6, 4]) == (-2.0, 12.0)
    # scattered points: Sxx = 5, Sxy = 7 around the means (1.5, 3)
    gradient, intercept = line([0, 1, 2, 3], [1, 3, 2, 6])
    assert gradient == pytest.approx(1.4) and intercept == pytest.approx(0.9)
    assert slope([0, 1, 2, 3], [1, 3, 2, 6]) == pytest.approx(1.4)
    assert slope([5, 10], [7.0, 7.0]) == 0.0


def test_the_step_at_which_the_line_reaches_a_floor() -> None:
    assert floor_step([1, 2, 3, 4], [10, 8, 6, 4], 0) == 6.0
    assert floor_step([1, 2, 3, 4], [10, 8, 6, 4], 5) == 3.5  # between two steps: the caller rounds up
    assert floor_step([1, 2, 3], [4, 6, 8], 0) is None  # rising: never
    assert floor_step([1, 2, 3], [5, 5, 5], 0) is None  # flat: never


@pytest.mark.parametrize(("xs", "ys"), [([1], [2]), ([3, 3], [1, 2]), ([1, 2], [1])])
def test_a_line_needs_two_distinct_xs_with_a_y_each(xs: list[float], ys: list[float]) -> None:
    with pytest.raises(ValueError, match="two or more distinct x values"):
        line(xs, ys)


def _cgroup(root: Path, version: int, limit: str, usage: int, cache: int) -> Path:
    """A cgroup's memory files as the kernel shows them (v2: memory.*; v1: memory/memory.*)."""
    root.mkdir(parents=True, exist_ok=True)
    if version == 2:
        names, keys = ("memory.max", "memory.current", "memory.stat"), ("inactive_file", "active_file")
    else:
        (root / "memory").mkdir(parents=True)
        names = ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes", "memory/memory.stat")
        keys = ("total_inactive_file", "total_active_file")
    (root / names[0]).write_text(f"{limit}\n")
    (root / names[1]).write_text(f"{usage}\n")
    (root / names[2]).write_text(f"anon 1\n{keys[0]} {cache // 2}\n{keys[1]} {cache - cache // 2}\nshmem 0\n")
    return root


@pytest.mark.parametrize("version", [1, 2])
def test_a_container_limit_below_the_host_is_the_memory_the_run_has(tmp_path: Path, version: int) -> None:
    # 1 GiB limit, 768 MiB used of which 200 MiB page cache: 456 MiB left under the limit
    cgroup = _cgroup(tmp_path, version, str(1024 * MIB), 768 * MIB, 200 * MIB)
    memory = host_memory(cgroup)
    assert memory.total == 1024 * MIB
    assert memory.available == min(456 * MIB, psutil.virtual_memory().available)


def test_without_a_limit_the_host_memory_counts(tmp_path: Path) -> None:
    host = psutil.virtual_memory().total
    unlimited = _cgroup(tmp_path / "v2", 2, "max", 768 * MIB, 0)
    above_the_host = _cgroup(tmp_path / "v1", 1, str(2 * host), 768 * MIB, 0)
    for cgroup in (unlimited, above_the_host, tmp_path / "none"):
        memory = host_memory(cgroup)
        assert memory.total == host and 0 < memory.available <= host


def test_a_folders_volume_free_and_used_space(tmp_path: Path) -> None:
    space, usage = disk_space(tmp_path), shutil.disk_usage(tmp_path)
    assert space.used + space.free <= usage.total and space.free > 0
