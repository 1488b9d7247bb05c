"""`medplay compare --eval NAME=DIR [--eval NAME=DIR ...] --output DIR`: evaluations side by side, paired tests."""

from __future__ import annotations

import argparse
from pathlib import Path

from medical_team.common.errors import UserInputError


def _named_folder(value: str) -> tuple[str, Path]:
    """`NAME=DIR` → (NAME, DIR)."""
    name, sep, folder = value.partition("=")
    if not sep or not name or not folder:
        raise argparse.ArgumentTypeError(f"expected NAME=DIR, got {value!r}")
    return name, Path(folder)


def run(args: argparse.Namespace) -> int:
    """Read every evaluation, compare them and write compare.json and compare.md."""
    from medical_team.evaluate.comparison import DEFAULT_STEM, compare, read_rung, write_comparison

    names = [name for name, _ in args.eval]
    if len(set(names)) != len(names):
        raise UserInputError("each evaluation needs its own name", field="--eval")
    result = compare([read_rung(name, folder) for name, folder in args.eval])
    json_path, md_path = write_comparison(result, Path(args.output), args.stem or DEFAULT_STEM)
    for rung in result["rungs"]:
        flag = rung["flag_accuracy"]
        print(f"{rung['name']}: flag accuracy {flag['value']:.3f} {flag['ci95']} on {rung['notes']} notes")
    print(f"wrote {json_path} and {md_path}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay compare`."""
    parser = subparsers.add_parser(
        "compare", help="evaluations of several checkpoints side by side (Wilson intervals, McNemar p-values)"
    )
    parser.add_argument(
        "--eval",
        action="append",
        required=True,
        type=_named_folder,
        metavar="NAME=DIR",
        help="a `medplay eval` output folder and its name in the table; in order (each is tested against the one before)",
    )
    parser.add_argument("--output", required=True, help="directory for STEM.json and STEM.md")
    parser.add_argument("--stem", help="file name of both outputs, without suffix (default: compare)")
    parser.set_defaults(run=run)
