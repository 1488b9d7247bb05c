"""`medplay sft [profile=NAME] [hydra overrides]`: the format warm start with verl's own SFT trainer.

Example: `medplay sft profile=cpu-smoke medplay.data_dir=build/data`, then
`medplay train medplay.model.path=build/cpu-smoke/sft/model` and `medplay eval --model build/cpu-smoke/sft/model`.
"""

from __future__ import annotations

import argparse

from medical_team.cli.train import (
    PROFILE_CHOICE,
    add_profile_arguments,
    print_step_lines,
    probe_report_path,
    user_overrides,
    with_profile,
)

# Shown per step after training; the metrics file holds every metric verl logs.
SUMMARY_METRICS = ("train/loss", "val/loss", "train/grad_norm", "train/lr")
SUMMARY_DIGITS = 4  # significant digits of the losses shown


def run(args: argparse.Namespace) -> int:
    """Fine-tune, then print the loss per step and where the model folder is."""
    from medical_team.launcher.sft.sft import sft

    paths = sft(with_profile(user_overrides(args, args.overrides), probe_report_path(args)))
    print_step_lines("sft", paths.metrics_file, SUMMARY_METRICS, SUMMARY_DIGITS)
    print(f"metrics: {paths.metrics_file}")
    print(f"model: {paths.model_dir}  (medplay train medplay.model.path={paths.model_dir}; medplay eval --model ...)")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay sft`."""
    parser = subparsers.add_parser(
        "sft",
        help="format warm start: supervised fine-tuning on the game's gold answers with verl's SFT trainer",
        description="Fine-tune on sft_train.parquet (written by `medplay convert`) with verl's SFT trainer and "
        "write a Hugging Face folder to <medplay.output_dir>/sft/model. Arguments are Hydra overrides of "
        "configs/medplay.yaml + configs/sft/, e.g. `profile=cpu-smoke sft.trainer.total_training_steps=20`. "
        + PROFILE_CHOICE,
    )
    add_profile_arguments(parser)
    parser.set_defaults(run=run)
