"""`medplay export --checkpoint DIR --output DIR`: a verified checkpoint's merged model with a model card (docs/export.md).

medplay export --checkpoint build/demo/checkpoints --output build/export        # the newest verified step
"""

from __future__ import annotations

import argparse
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    """Verify the checkpoint against its manifest, export it, and say what was written."""
    from medical_team.evaluate.export import export_checkpoint
    from medical_team.reliability.verified import verified_checkpoint

    checkpoint = verified_checkpoint(Path(args.checkpoint))
    for line in checkpoint.skipped:
        print(f"skipped {line}")
    print(f"verified {checkpoint.folder}: {len(checkpoint.files)} files match its manifest")
    done = export_checkpoint(checkpoint, Path(args.output), Path(args.eval) if args.eval else None)
    record = done.record
    adapter = record["files"]["lora_adapter"]
    print(
        f"wrote {done.output}: {len(record['files']['model'])} model files"
        + (f", {len(adapter)} adapter files in lora_adapter/" if adapter else "")
        + ", README.md (model card), medplay_export.json"
    )
    for missing, what in (
        (record["run"]["config"] is None, "the run's config.yaml (not beside the checkpoint root)"),
        (record["versions"]["training"] is None, "the run's versions.json"),
        (record["evaluation"]["validation"] is None and record["evaluation"]["benchmark"] is None, "evaluation scores"),
    ):
        if missing:
            print(f"not found, so not in the card: {what}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay export`."""
    parser = subparsers.add_parser("export", help="a verified checkpoint's merged HF model with a model card")
    parser.add_argument(
        "--checkpoint",
        required=True,
        help="a global_step_N folder, or a checkpoint root (its newest step that matches its manifest)",
    )
    parser.add_argument("--output", required=True, help="folder to create (absent or empty) for the exported model")
    parser.add_argument("--eval", help="a `medplay eval --model` folder of this checkpoint: its scores go in the card")
    parser.set_defaults(run=run)
