"""How a benchmark writes its result: the JSON with its provenance, the machine and its load, and the exit status."""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from medical_team.bench.provenance import provenance
from medical_team.bench.table import print_result


def machine() -> dict[str, Any]:
    """Python version, CPU count and platform of this machine, for a result's `machine` field."""
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}


def write_json(output: Path, result: dict[str, Any], indent: int | None = 2) -> dict[str, Any]:
    """Write `result` as JSON to `output`, its provenance first (folders made); return the provenance."""
    facts = provenance()
    output.parent.mkdir(parents=True, exist_ok=True)
    separators = None if indent else (",", ":")
    text = json.dumps({"provenance": facts, **result}, indent=indent, separators=separators)
    output.write_text(text + "\n", encoding="utf-8")
    return facts


def write_result(
    output: Path,
    result: dict[str, Any],
    title: str,
    rows: Iterable[Sequence[Any]],
    header: Sequence[str] = ("figure", "value"),
) -> int:
    """Write `result` as JSON to `output`, print its table, and return the exit status: 0 when it meets its target."""
    facts = write_json(output, result)
    verdict = ("meets its target", result["meets_target"], *[""] * (len(header) - 2))
    print_result(title, [*rows, verdict], facts, [output], header)
    return 0 if result["meets_target"] else 1
