"""`medplay convert`: MEDEC CSVs or plain notes -> train/val/benchmark parquet, train JSONL and the dataset report.

Example: `medplay convert --output build/data --seed 0 --val-ratio 0.1`
Plain notes (no labels): `medplay convert --notes notes.csv --group-column patient --output build/data`
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medical_team.cli.arg_types import int_at_least
from medical_team.common.errors import UserInputError
from medical_team.common.vocab import BenignAttackMode

if TYPE_CHECKING:
    from medical_team.game.dataset import ConvertOptions

# Options of plain notes (--notes) only, with their defaults (None: not given).
PLAIN_ONLY = ("--id-column", "--text-column", "--group-column", "--notes-are-clean", "--on-bad-row")


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
        help="turn MEDEC CSVs or plain notes into the game's verl parquet files, OpenRLHF JSONL and a dataset report",
        description="Write DIR/train.parquet, val.parquet, benchmark.parquet, train.jsonl, sft_train.parquet, "
        "sft_val.parquet and dataset_report.json. What each input shape gives: docs/data.md.",
    )
    parser.add_argument(
        "--input",
        nargs="+",
        metavar="CSV",
        help="MEDEC CSV files for the game (default: the bundled MEDEC-MS validation file)",
    )
    parser.add_argument(
        "--notes",
        metavar="FILE",
        help="instead of MEDEC: plain notes without labels (a CSV, a JSONL file or a folder of .txt files), played "
        "as adversarial games the judge settles",
    )
    parser.add_argument(
        "--id-column", metavar="NAME", help="plain notes: the id column or field (default: note_id, else id)"
    )
    parser.add_argument(
        "--text-column", metavar="NAME", help="plain notes: the text column or field (default: note, else text)"
    )
    parser.add_argument(
        "--group-column",
        metavar="NAME",
        help="plain notes: the column or field naming each note's case (notes of one case stay in one split; "
        "default: each note is its own case)",
    )
    parser.add_argument(
        "--notes-are-clean",
        action="store_true",
        default=None,
        help="plain notes: you assert no note holds a medical error, so half of them are also played as vanilla "
        "games (truth: no error) and SFT files are written",
    )
    parser.add_argument(
        "--on-bad-row",
        choices=["refuse", "skip"],
        help="plain notes: refuse the input (default) or skip rows without a usable id or text (listed in the report)",
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
        "--include-clean-notes",
        action="store_true",
        help="MEDEC CSVs: add notes with Error Flag 0 as further benign seeds",
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
    from medical_team.game.dataset import ConvertOptions

    _check_input_shape(args)
    options = ConvertOptions(
        seed=args.seed,
        val_ratio=args.val_ratio,
        include_clean_notes=args.include_clean_notes,
        benign_mode=BenignAttackMode(args.benign_mode),
        encoding=args.encoding,
        benchmark_notes=args.benchmark_notes,
    )
    benchmark = args.benchmark or bundled_csv(TEST_CSV)
    if args.notes is not None:
        report = _convert_plain(args, benchmark, options)
    else:
        report = _convert_medec(args.input or [bundled_csv(VALIDATION_CSV)], benchmark, args.output, options)
    print_report(report, Path(args.output))
    warn_long_notes(report)
    return 0


def _check_input_shape(args: argparse.Namespace) -> None:
    """Refuse options of the other input shape: MEDEC CSVs (--input) and plain notes (--notes) do not mix."""
    if args.notes is not None and args.input:
        raise UserInputError(
            "give MEDEC CSVs (--input) or plain notes (--notes), not both: convert one shape at a time",
            field="--notes",
        )
    if args.notes is None:
        for option in PLAIN_ONLY:
            if getattr(args, option.removeprefix("--").replace("-", "_")) is not None:
                raise UserInputError("applies to plain notes only; add --notes FILE or leave it out", field=option)


def _convert_medec(inputs: list[Any], benchmark: Path | str, output: str, options: ConvertOptions) -> dict[str, Any]:
    """`convert --input`; a game input without MEDEC's columns is pointed to --notes."""
    from medical_team.data.medec import REQUIRED_COLUMNS
    from medical_team.game.dataset import convert_medec

    try:
        return convert_medec(inputs, benchmark, output, options)
    except UserInputError as error:
        game_files = {Path(path).name for path in inputs} - {Path(benchmark).name}
        if error.row != 0 or error.field not in REQUIRED_COLUMNS or error.file not in game_files:
            raise
        hint = f"{error.message}; notes without MEDEC's labels convert with --notes FILE (docs/data.md)"
        raise UserInputError(hint, file=error.file, row=0, field=error.field) from None


def _convert_plain(args: argparse.Namespace, benchmark: Path | str, options: ConvertOptions) -> dict[str, Any]:
    """`convert --notes`: the plain-notes conversion with the options given."""
    from medical_team.data.plain_columns import NoteColumns
    from medical_team.game.plain_dataset import PlainOptions, convert_plain_notes

    defaults = PlainOptions()
    plain = PlainOptions(
        id_column=args.id_column,
        text_column=args.text_column,
        group_column=args.group_column,
        notes_are_clean=bool(args.notes_are_clean),
        on_bad_row=args.on_bad_row or defaults.on_bad_row,
    )
    report = convert_plain_notes(args.notes, benchmark, args.output, options, plain)
    if report["columns"] is not None:
        line = NoteColumns(**report["columns"]).found_line(Path(args.notes).name)
        if line:
            print(line)
    return report


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
            _labels(summary),
            _reasons(summary["skipped"]),
            _reasons(summary["rows_repaired"]),
        )
    console.print(files)
    if "sentences" in report:  # plain notes
        _print_plain(console, report)
    written = ", ".join(f"{name} ({rows} rows)" for name, rows in report["files"].items())
    console.print(f"Wrote {written} and dataset_report.json to {output_dir}")


def _labels(summary: dict[str, Any]) -> str:
    """The `error / clean` cell: the counts, or what a plain-notes input says of its labels."""
    if summary["error_notes"] is None:
        return f"unlabelled ({summary['labels']})" if summary.get("labels", "none") != "none" else "unlabelled"
    return f"{summary['error_notes']} / {summary['clean_notes']}"


def _print_plain(console: Any, report: dict[str, Any]) -> None:
    """Plain notes: how they were numbered and grouped, what they are played as, and every skipped row."""
    options, sentences = report["options"], report["sentences"]
    groups = report["splits"]["train"]["case_groups"] + report["splits"]["val"]["case_groups"]
    grouping = f"by {options['group_column']!r}" if options["group_column"] else "one note per case"
    played = ", ".join(f"{category} {counts['total']}" for category, counts in report["seeds"]["by_category"].items())
    console.print(
        f"Plain notes: {groups} case groups ({grouping}); {sentences['total']} sentences numbered by "
        f"{sentences['splitter']} ({sentences['per_note_min']}-{sentences['per_note_max']} per note); "
        f"games: {played}",
        highlight=False,
    )
    for summary in report["inputs"]:
        for line in summary.get("skipped_rows", []):
            console.print(f"skipped: {line}", highlight=False, markup=False)


def _reasons(counts: dict[str, int]) -> str:
    """`count reason` lines, or `none`."""
    return "\n".join(f"{count} {reason}" for reason, count in counts.items()) or "none"
