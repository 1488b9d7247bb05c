"""The `medplay` command: one small module per subcommand, heavy imports inside each command."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from medical_team.errors import UserInputError

# subcommand -> module that defines `add_parser(subparsers)`; each parser sets `run=` (args -> exit code).
COMMANDS: dict[str, str] = {
    "compare": "medical_team.cli.compare",
    "config": "medical_team.cli.config",
    "convert": "medical_team.cli.convert",
    "eval": "medical_team.cli.eval",
    "judge": "medical_team.cli.judge",
    "model": "medical_team.cli.model",
    "probe": "medical_team.cli.probe",
    "report": "medical_team.cli.report",
    "sft": "medical_team.cli.sft",
    "train": "medical_team.cli.train",
    "version": "medical_team.cli.version",
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(prog="medplay", description="Adversarial self-play for medical error detection.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMANDS.values():
        importlib.import_module(module_name).add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `medplay` with these arguments; return the exit status (2 for user mistakes)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except UserInputError as error:
        print(f"medplay {args.command}: error: {error.one_line()}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
