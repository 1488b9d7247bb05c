"""`medplay report --metrics FILE --output DIR [--games DIR]`: PNG plots of a training run, a Markdown page embedding
them, and report.html, one self-contained page with the plots and the games the trainer recorded each step."""

from __future__ import annotations

import argparse
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    """Read the metrics JSONL and the game records, render the plots, write both pages and say where they are."""
    from medical_team.evaluate.metrics_log import read_metrics
    from medical_team.evaluate.report_html import write_report_html
    from medical_team.evaluate.training_report import write_training_report
    from medical_team.game.game_records import games_folder, read_game_records

    history = read_metrics(args.metrics)
    folder = Path(args.games) if args.games else games_folder(args.metrics)
    games = read_game_records(folder)
    page, results = write_training_report(history, Path(args.output))
    html = write_report_html(history, results, games, folder, Path(args.output))
    drawn = [r for r in results if r.png is not None]
    print(f"read {len(history.steps)} steps from {args.metrics}")
    if history.replaced_steps:
        print(f"{history.replaced_steps} records repeat a step logged before; a step's records merge, later values win")
    if history.skipped_values:
        print(f"{history.skipped_values} non-numeric values were not plotted")
    for result in results:
        state = f"{result.png}" if result.png else "not drawn: none of its metrics were logged"
        print(f"  {result.name}: {state}")
    recorded = sum(len(records) for records in games.values())
    print(f"read {recorded} games of {len(games)} steps from {folder}" if games else f"no game records in {folder}")
    print(f"wrote {len(drawn)} of {len(results)} plots, {page} and {html}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay report`."""
    parser = subparsers.add_parser(
        "report", help="plot a training run's metrics and show its games (PNG, report.md, report.html)"
    )
    parser.add_argument("--metrics", required=True, help="metrics JSONL written by the trainer's file logger")
    parser.add_argument("--output", required=True, help="directory for the PNG plots, report.md and report.html")
    parser.add_argument(
        "--games",
        help="folder of the trainer's game records (step_<N>.jsonl; default: the games folder beside --metrics)",
    )
    parser.set_defaults(run=run)
