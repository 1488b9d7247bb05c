"""The short table every benchmark prints at its end: its headline figures, where and with what they were measured
(provenance.py), and the files it wrote."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from medical_team.bench.provenance import one_line


def cell(value: Any) -> str:
    """A value as a table shows it: numbers to four significant places (whole from 10,000), nothing as `n/a`."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 10_000 else f"{value:.0f}"
    return str(value)


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table of `rows` under `header`."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines)


def print_result(
    title: str,
    rows: Iterable[Sequence[Any]],
    facts: dict[str, Any],
    written: Iterable[Path | str],
    header: Sequence[str] = ("figure", "value"),
) -> None:
    """Print the benchmark's title, its table, the provenance line and the files it wrote."""
    print(f"\n{title}", flush=True)
    print(markdown_table(header, rows))
    print(f"measured on: {one_line(facts)}")
    for path in written:
        print(f"wrote {path}", flush=True)
