"""verl's checkpoint folder, read without verl: the `global_step_N` folders and the tracker file naming the latest.

Used by the trainer's reliability hooks (`reliability/checkpoints.py`) and by `medplay eval`
(`evaluate/model_source.py`), which must import no verl.
"""

from __future__ import annotations

import re
from pathlib import Path

TRACKER_NAME = "latest_checkpointed_iteration.txt"  # verl's name; its resume logic reads it

_STEP_DIR = re.compile(r"^global_step_(\d+)$")


def step_dirs(root: Path) -> dict[int, Path]:
    """The `global_step_N` folders under a checkpoint root, by step."""
    if not root.is_dir():
        return {}
    found = {}
    for child in root.iterdir():
        match = _STEP_DIR.match(child.name)
        if match and child.is_dir():
            found[int(match.group(1))] = child
    return found


def read_tracker(root: Path) -> int | None:
    """The step the tracker names, or None when it is missing, empty or unreadable."""
    try:
        return int((root / TRACKER_NAME).read_text().strip())
    except (OSError, ValueError):
        return None


def last_checkpoint(root: Path) -> str | None:
    """The checkpoint folder a resume would start from (the tracker's step), if any."""
    step = read_tracker(root)
    return None if step is None else str(root / f"global_step_{step}")
