"""Waiting in a test for the file a held phase writes (medical_team/run/phase_hold.py writes it whole)."""

from __future__ import annotations

import time
from pathlib import Path


def wait_for_file(path: Path, timeout_s: float = 60) -> None:
    """Return once `path` exists; fail the test after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.05)
