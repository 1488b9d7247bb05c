"""`medplay convert`: MEDEC CSVs -> train/val/benchmark parquet, train JSONL and the dataset report.

Example: `medplay convert --output build/data --seed 0 --val-ratio 0.1`
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from medical_team.cli.arg_types import int_at_least
from medical_team.vocab import BenignAttackMode


def _ratio(text: str) -> float:
    """argparse type: a float strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (exclusive), got {text}")
    return value


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay convert`."""
    parser = subparsers.add_parser(
        "convert",
        help="turn MEDEC CSVs into the game's verl parquet files, OpenRLHF JSONL and a dataset report",
        description="Write DIR/train.parquet, val.parquet, benchmark.parquet, train.jsonl, sft_train.parquet, "
        "sft_val.parquet and dataset_report.json.",
    )
    parser.add_argument(
        "--input",
        nargs="+",
        metavar="CSV",
        help="MEDEC CSV files for the game (default: the bundled MEDEC-MS validation file)",
    )
    parser.add_argument(
        "--benchmark", metavar="CSV", help="held-out MEDEC CSV for evaluation (default: the bundled MEDEC-MS test file)"
    )
    parser.add_argument("--output", required=True, metavar="DIR", help="directory for the output files")
    parser.add_argument(
        "--seed", type=int_at_least(0), default=0, help="seed of the category draw and the split (default 0)"
    )
    parser.add_argument(
        "--val-ratio", type=_ratio, default=0.1, metavar="F", help="share of case groups for validation (default 0.1)"
    )
    parser.add_argument(
        "--include-clean-notes", action="store_true", help="add notes with Error Flag 0 as further benign seeds"
    )
    parser.add_argument(
        "--benign-mode",
        choices=[mode.value for mode in BenignAttackMode],
        default=BenignAttackMode.INJECT.value,
        help="attacker task in adversarial_benign games (default inject)",
    )
    parser.add_argument(
        "--benchmark-notes",
        type=int_at_least(1),
        metavar="N",
        help="write only the benchmark's first N notes (default all): the notes `medplay eval --limit N` scores, "
        "for a training run's validation on a few notes (docs/evaluation.md)",
    )
    parser.add_argument("--encoding", default="utf-8", help="encoding of the CSV files (default utf-8)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Convert, then print the report tables."""
    from medical_team.data.medec import TEST_CSV, VALIDATION_CSV, bundled_csv
    from medical_team.game.dataset import ConvertOptions, convert_medec

    options = ConvertOptions(
        seed=args.seed,
        val_ratio=args.val_ratio,
        include_clean_notes=args.include_clean_notes,
        benign_mode=BenignAttackMode(args.benign_mode),
        encoding=args.encoding,
        benchmark_notes=args.benchmark_notes,
    )
    inputs = args.input or [bundled_csv(VALIDATION_CSV)]
    benchmark = args.benchmark or bundled_csv(TEST_CSV)
    report = convert_medec(inputs, benchmark, args.output, options)
    print_report(report, Path(args.output))
    warn_long_notes(report)
    return 0


def warn_long_notes(report: dict[str, Any]) -> None:
    """On stderr: the notes no profile's prompt can hold (one summary line, then the first few)."""
    from medical_team.game.note_lengths import warning_lines

    for number, line in enumerate(warning_lines(report["long_notes"])):
        print(f"medplay convert: warning: {line}" if number == 0 else line, file=sys.stderr)


def print_report(report: dict[str, Any], output_dir: Path) -> None:
    """Print the seed table and the per-file loading table."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console = Console(width=150)  # logs and pipes: wide enough for one line per row
    by_category = report["seeds"]["by_category"]
    splits = report["splits"]
    types = list(dict.fromkeys(t for counts in by_category.values() for t in counts if t != "total"))
    seeds = Table(title=f"Game seeds: {report['seeds']['total']} (error type of the case)")
    for column in ["category", *types, "total", "train", "val"]:
        seeds.add_column(column, justify="left" if column == "category" else "right")
    for category, counts in by_category.items():
        split_counts = [str(splits[name]["by_category"][category]["total"]) for name in ("train", "val")]
        seeds.add_row(category, *(str(counts.get(t, 0)) for t in types), str(counts["total"]), *split_counts)
    console.print(seeds)

    files = Table(title="Input files")
    for column in ("file", "role", "rows", "notes", "error / clean", "skipped (why)", "repaired (why)"):
        files.add_column(column)
    for role, summary in [*(("game", s) for s in report["inputs"]), ("benchmark", report["benchmark"])]:
        files.add_row(
            summary["file"],
            role,
            str(summary["rows_read"]),
            str(summary["notes"]),
            f"{summary['error_notes']} / {summary['clean_notes']}",
            _reasons(summary["skipped"]),
            _reasons(summary["rows_repaired"]),
        )
    console.print(files)
    written = ", ".join(f"{name} ({rows} rows)" for name, rows in report["files"].items())
    console.print(f"Wrote {written} and dataset_report.json to {output_dir}")


def _reasons(counts: dict[str, int]) -> str:
    """`count reason` lines, or `none`."""
    return "\n".join(f"{count} {reason}" for reason, count in counts.items()) or "none"
