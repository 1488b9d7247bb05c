"""`medplay report --metrics FILE --output DIR`: PNG plots of a training run and a Markdown page embedding them."""

from __future__ import annotations

import argparse
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    """Read the metrics JSONL, render the plots, write the page and say where it is."""
    from medical_team.evaluate.metrics_log import read_metrics
    from medical_team.evaluate.training_report import write_training_report

    history = read_metrics(args.metrics)
    page, results = write_training_report(history, Path(args.output))
    drawn = [r for r in results if r.png is not None]
    print(f"read {len(history.steps)} steps from {args.metrics}")
    if history.replaced_steps:
        print(f"{history.replaced_steps} records repeat a step logged before; a step's records merge, later values win")
    if history.skipped_values:
        print(f"{history.skipped_values} non-numeric values were not plotted")
    for result in results:
        state = f"{result.png}" if result.png else "not drawn: none of its metrics were logged"
        print(f"  {result.name}: {state}")
    print(f"wrote {len(drawn)} of {len(results)} plots and {page}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay report`."""
    parser = subparsers.add_parser("report", help="plot a training run's metrics (PNG + Markdown page)")
    parser.add_argument("--metrics", required=True, help="metrics JSONL written by the trainer's file logger")
    parser.add_argument("--output", required=True, help="directory for the PNG plots and report.md")
    parser.set_defaults(run=run)
