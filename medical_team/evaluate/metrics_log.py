"""Reader for the training metrics JSONL that verl's file logger writes (`{"step": N, "data": {...}}` per line)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from medical_team.errors import UserInputError


@dataclass
class MetricsHistory:
    """Scalar metrics per training step, read from one metrics file."""

    source: str
    steps: list[int] = field(default_factory=list)  # ascending, unique
    rows: dict[int, dict[str, float]] = field(default_factory=dict)  # step -> metric -> value
    replaced_steps: int = 0  # steps logged more than once (a resumed run); the last record wins
    skipped_values: int = 0  # non-numeric values (strings, lists) that cannot be plotted

    def key_for(self, name: str) -> str | None:
        """The logged key for a metric name: the name itself, or one that ends with `/<name>` (a prefixed logger)."""
        keys = self.keys()
        if name in keys:
            return name
        suffixed = sorted(k for k in keys if k.endswith(f"/{name}"))
        return suffixed[0] if suffixed else None

    def keys(self) -> set[str]:
        """Every metric key logged at any step."""
        return {key for row in self.rows.values() for key in row}

    def series(self, name: str) -> tuple[list[int], list[float]]:
        """(steps, values) of one metric, only at steps where it was logged as a finite number."""
        key = self.key_for(name)
        if key is None:
            return [], []
        points = [
            (s, self.rows[s][key]) for s in self.steps if key in self.rows[s] and math.isfinite(self.rows[s][key])
        ]
        return [s for s, _ in points], [v for _, v in points]


def read_metrics(path: str | Path) -> MetricsHistory:
    """Read a metrics JSONL file; a malformed line raises `UserInputError` naming the file and line."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise UserInputError("no such file", file=str(path), field="--metrics") from None
    except (IsADirectoryError, UnicodeDecodeError) as error:
        raise UserInputError(f"cannot read a metrics JSONL file: {error}", file=str(path), field="--metrics") from None
    history = MetricsHistory(source=str(path))
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        step, data = _parse_line(line, path.name, number)
        if step in history.rows:
            history.replaced_steps += 1
        numeric = {k: float(v) for k, v in data.items() if isinstance(v, int | float) and not isinstance(v, bool)}
        history.skipped_values += len(data) - len(numeric)
        history.rows[step] = numeric
    if not history.rows:
        raise UserInputError(
            'holds no metric records; expected JSONL lines like {"step": 1, "data": {...}}',
            file=path.name,
            row=1,
            field="step",
        )
    history.steps = sorted(history.rows)
    return history


def _parse_line(line: str, name: str, number: int) -> tuple[int, dict]:
    """The step and the metrics of one JSONL line."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise UserInputError(f"not valid JSON ({error.msg})", file=name, row=number, field="line") from None
    if not isinstance(record, dict) or not isinstance(record.get("data"), dict):
        raise UserInputError("expected an object with a 'data' object of metrics", file=name, row=number, field="data")
    step = record.get("step")
    if not isinstance(step, int) or isinstance(step, bool):
        raise UserInputError(f"expected an integer step, found {step!r}", file=name, row=number, field="step")
    return step, record["data"]
