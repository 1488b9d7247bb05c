"""Helpers of the appliance tests: repository paths, and (from `processes`) free ports and stopping a session."""

from __future__ import annotations

import sys
from pathlib import Path

from processes import free_ports, stop_session

REPO = Path(__file__).resolve().parents[2]
ENTRYPOINT = REPO / "entrypoints" / "entrypoint.sh"
VENV_BIN = Path(sys.executable).parent

__all__ = ["ENTRYPOINT", "REPO", "VENV_BIN", "free_ports", "stop_session"]
