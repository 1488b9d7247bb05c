"""The `medplay` command: one small module per subcommand, heavy imports inside each command."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from medical_team.common.errors import UserInputError

# subcommand -> module that defines `add_parser(subparsers)`; each parser sets `run=` (args -> exit code).
COMMANDS: dict[str, str] = {
    "bench": "medical_team.cli.bench",
    "compare": "medical_team.cli.compare",
    "config": "medical_team.cli.config",
    "convert": "medical_team.cli.convert",
    "eval": "medical_team.cli.eval",
    "export": "medical_team.cli.export",
    "judge": "medical_team.cli.judge",
    "model": "medical_team.cli.model",
    "predict": "medical_team.cli.predict",
    "probe": "medical_team.cli.probe",
    "report": "medical_team.cli.report",
    "sft": "medical_team.cli.sft",
    "status": "medical_team.cli.status",
    "train": "medical_team.cli.train",
    "version": "medical_team.cli.version",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered, or only `command`'s when it names one.

    One subcommand's module is all a command line that names it needs: the others' imports (the stack's version
    table, the judge registry, ...) would cost every `medplay` command a second on a small machine.
    """
    parser = argparse.ArgumentParser(prog="medplay", description="Adversarial self-play for medical error detection.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    names = [command] if command in COMMANDS else list(COMMANDS)
    for name in names:
        importlib.import_module(COMMANDS[name]).add_parser(subparsers)
    _describe_subcommands(parser)
    return parser


def _describe_subcommands(parser: argparse.ArgumentParser) -> None:
    """Give each subcommand (at any depth) that has no description its one-line help, so `--help` says what it does."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, subparser in action.choices.items():
                if subparser.description is None and helps.get(name):
                    subparser.description = f"{helps[name][0].upper()}{helps[name][1:]}."
                _describe_subcommands(subparser)


def main(argv: Sequence[str] | None = None) -> int:
    """Run `medplay` with these arguments; return the exit status (2 for user mistakes)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(arguments[0] if arguments else None)
    args = parser.parse_args(arguments)
    try:
        return int(args.run(args) or 0)
    except UserInputError as error:
        print(f"medplay {args.command}: error: {error.one_line()}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
