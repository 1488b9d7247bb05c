"""Helpers of the benchmark scripts: the machine a result was measured on, and writing the result."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any


def machine() -> dict[str, Any]:
    """Python version, CPU count and platform of this machine, for a result's `machine` field."""
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}


def write_result(output: Path, result: dict[str, Any]) -> int:
    """Write `result` as JSON to `output`, print it, and return the exit status: 0 when it meets its target."""
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    return 0 if result["meets_target"] else 1
