"""`medplay version`: the versions of this package and of its stack, the image's tag and the git commit."""

from __future__ import annotations

import argparse
import json

from medical_team.run.stack import run_record


def run(args: argparse.Namespace) -> int:
    """Print the versions as JSON."""
    print(json.dumps(run_record(), indent=2))
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay version`."""
    subparsers.add_parser("version", help="print package and stack versions").set_defaults(run=run)
