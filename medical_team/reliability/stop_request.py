"""The stop request: the file through which the launcher asks the trainer, inside a Ray actor, to save and stop.

The launcher's SIGTERM handler writes it (medical_team/launcher/graceful_stop.py); the trainer looks for it at
the end of every step (medical_team/task_runner/graceful_stop.py); a new run clears it.
"""

from __future__ import annotations

import time
from pathlib import Path

STOP_FILE = "medplay_stop_requested"
EXIT_AFTER_GRACE = 143  # 128 + SIGTERM


def request_stop(checkpoint_root: Path, reason: str) -> None:
    """Ask the trainer writing to `checkpoint_root` to save and stop after its current step."""
    checkpoint_root.mkdir(parents=True, exist_ok=True)
    (checkpoint_root / STOP_FILE).write_text(f"{reason} at {time.time():.0f}\n")


def stop_requested(checkpoint_root: Path) -> bool:
    """Whether a stop was requested for this checkpoint folder."""
    return (checkpoint_root / STOP_FILE).exists()


def clear_stop_request(checkpoint_root: Path) -> None:
    """Forget an old stop request (a new run starts)."""
    (checkpoint_root / STOP_FILE).unlink(missing_ok=True)


class StoppedWhileWaitingError(RuntimeError):
    """A stop request came while games waited on the judge: the run ended without finishing its step."""

    exit_status = EXIT_AFTER_GRACE
