"""The training report: every plot of `plots.PLOTS` as a PNG plus a Markdown page that embeds them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from medical_team.evaluate.metrics_log import MetricsHistory
from medical_team.evaluate.plots import PLOTS, render_plot

PAGE_NAME = "report.md"


@dataclass(frozen=True)
class PlotResult:
    """One rendered plot: its PNG (None when no series was logged) and the labels of the lines drawn."""

    name: str
    title: str
    png: Path | None
    labels: tuple[str, ...]


def write_training_report(history: MetricsHistory, output: Path) -> tuple[Path, list[PlotResult]]:
    """Render every plot into `output` and write the page; return the page path and the plots."""
    output.mkdir(parents=True, exist_ok=True)
    results = []
    for spec in PLOTS:
        png = output / f"{spec.name}.png"
        labels = render_plot(spec, history, png)
        results.append(PlotResult(spec.name, spec.title, png if labels else None, tuple(labels)))
    page = output / PAGE_NAME
    page.write_text(_page(history, results), encoding="utf-8")
    return page, results


def _page(history: MetricsHistory, results: list[PlotResult]) -> str:
    """The Markdown page: source, step range, then one section per plot."""
    lines = [
        "# Training report",
        "",
        f"Metrics file: `{history.source}`; steps {history.steps[0]}–{history.steps[-1]} ({len(history.steps)} logged).",
    ]
    if history.replaced_steps:
        lines.append(
            f"{history.replaced_steps} records repeat a step logged before (a resumed run); later values are shown."
        )
    lines.append("")
    for result in results:
        lines += [f"## {result.title}", ""]
        if result.png is None:
            lines += ["No series of this plot were logged.", ""]
        else:
            lines += [f"![{result.title}]({result.png.name})", "", f"Series: {', '.join(result.labels)}.", ""]
    return "\n".join(lines)
