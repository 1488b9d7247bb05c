"""The training metrics JSONL as `medplay report` plots it: numeric series per step (read by `metrics_records`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from medical_team.common.errors import UserInputError
from medical_team.run_folder.metrics_records import read_step_records


@dataclass
class MetricsHistory:
    """Scalar metrics per training step, read from one metrics file."""

    source: str
    steps: list[int] = field(default_factory=list)  # ascending, unique
    rows: dict[int, dict[str, float]] = field(default_factory=dict)  # step -> metric -> value
    replaced_steps: int = 0  # records of a step logged before (a resumed run); a step's records merge, later keys win
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
    """Read a metrics JSONL file (`medical_team.run_folder.metrics_records`); a malformed line raises `UserInputError` naming it."""
    path = Path(path)
    try:
        records = read_step_records(path)
    except FileNotFoundError:
        raise UserInputError("no such file", file=str(path), field="--metrics") from None
    except IsADirectoryError as error:
        raise UserInputError(f"cannot read a metrics JSONL file: {error}", file=str(path), field="--metrics") from None
    if not records.steps:
        raise UserInputError(
            'holds no metric records; expected JSONL lines like {"step": 1, "data": {...}}',
            file=path.name,
            row=1,
            field="step",
        )
    history = MetricsHistory(source=str(path), steps=list(records.steps), replaced_steps=records.repeated)
    for step, data in records.steps.items():
        numeric = {k: float(v) for k, v in data.items() if isinstance(v, int | float) and not isinstance(v, bool)}
        history.skipped_values += len(data) - len(numeric)
        history.rows[step] = numeric
    return history
