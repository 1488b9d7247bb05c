"""Remove the `/dev/shm/psm_*` segments that vLLM servers leave behind (~400 MiB each) once nobody maps them."""

from __future__ import annotations

from pathlib import Path

SHM_DIR = Path("/dev/shm")
PATTERN = "psm_*"


def shm_segments() -> set[Path]:
    """The shared-memory segments that exist now."""
    return set(SHM_DIR.glob(PATTERN)) if SHM_DIR.is_dir() else set()


def _mapped_paths() -> set[str]:
    """Every file that some live process has mapped (read from /proc/*/maps)."""
    mapped: set[str] = set()
    for maps in Path("/proc").glob("[0-9]*/maps"):
        try:
            text = maps.read_text()
        except OSError:  # the process ended or is not ours to read
            continue
        mapped.update(line.split(maxsplit=5)[-1] for line in text.splitlines() if str(SHM_DIR) in line)
    return mapped


def remove_orphaned_segments(before: set[Path]) -> list[Path]:
    """Delete segments created since `before` that no live process maps; return what was deleted."""
    mapped = _mapped_paths()
    removed = []
    for segment in sorted(shm_segments() - before):
        if str(segment) in mapped:
            continue
        try:
            segment.unlink()
        except FileNotFoundError:
            continue
        removed.append(segment)
    return removed
