"""`medplay export`: a verified checkpoint's merged Hugging Face folder as a standalone model folder with a model card.

The output holds the merged model's files (copied: verl rewrites a step's files in place when a resumed run saves that
step again, which would change a hard-linked export), the LoRA adapter under `lora_adapter/` when the checkpoint has
one, the run's config (`training_config.yaml`, secrets redacted), `README.md` (`model_card.py`) and
`medplay_export.json` (the card's facts). It is written into a sibling folder, then renamed: a failed export leaves
no output. The checkpoint is verified by the caller (`reliability/verified.py`); only files that its
manifest lists, and that matched it, are exported.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from medical_team.common.errors import UserInputError
from medical_team.evaluate import export_facts
from medical_team.evaluate.model_card import model_card
from medical_team.evaluate.model_source import resolve_model
from medical_team.run.redaction import redacted
from medical_team.run.stack import run_record

ADAPTER_DIR = "lora_adapter"  # beside `huggingface` in verl's actor folder (task_runner/lora_export.py)
CARD = "README.md"
RECORD = "medplay_export.json"
TRAINING_CONFIG = "training_config.yaml"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


class VerifiedStep(Protocol):
    """A checkpoint step the caller verified against its manifest (`reliability.verified.VerifiedCheckpoint`)."""

    step: int
    folder: Path  # global_step_N
    files: Mapping[str, Mapping[str, Any]]  # the manifest: relative path -> size and digest, each checked

    def record(self) -> dict[str, Any]:
        """What the check found, for medplay_export.json."""


@dataclass(frozen=True)
class Export:
    """What `export_checkpoint` wrote."""

    output: Path
    record: dict[str, Any]


def export_checkpoint(checkpoint: VerifiedStep, output: Path, eval_dir: Path | None = None) -> Export:
    """Write `checkpoint`'s model, adapter, config, card and record into `output` (absent or empty)."""
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise UserInputError(
            "already exists and is not empty: remove it or pass another --output", file=str(output), field="--output"
        )
    model_folder = Path(resolve_model(str(checkpoint.folder), field="--checkpoint"))
    adapter_folder = checkpoint.folder / "actor" / ADAPTER_DIR
    copies = _planned_copies(checkpoint, model_folder, adapter_folder if adapter_folder.is_dir() else None)
    record = _record(checkpoint, model_folder, copies, eval_dir)
    staging = output.with_name(f".{output.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        staging.mkdir(parents=True)
        for target, source in copies.items():
            (staging / target).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, staging / target)
        if record["run"]["config"]:
            _write_config(Path(record["run"]["folder"]) / export_facts.RUN_CONFIG, staging / TRAINING_CONFIG)
        (staging / RECORD).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        (staging / CARD).write_text(model_card(record), encoding="utf-8")
        if output.exists():
            output.rmdir()
        staging.rename(output)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Export(output, record)


def _planned_copies(checkpoint: VerifiedStep, model_folder: Path, adapter_folder: Path | None) -> dict[str, Path]:
    """Output path -> checkpoint file, for the model's and the adapter's files; each must be one the manifest lists."""
    copies: dict[str, Path] = {}
    for folder, prefix in ((model_folder, ""), (adapter_folder, f"{ADAPTER_DIR}/")):
        if folder is None:
            continue
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            relative = path.relative_to(checkpoint.folder).as_posix()
            if relative not in checkpoint.files:
                raise UserInputError(
                    "is not in the checkpoint's manifest (added after the checkpoint was committed?), so it cannot "
                    "be verified; refusing to export it",
                    file=str(path),
                    field="--checkpoint",
                )
            copies[prefix + path.relative_to(folder).as_posix()] = path
    if not any(name in copies for name in TOKENIZER_FILES):
        raise UserInputError(
            f"holds no tokenizer ({' or '.join(TOKENIZER_FILES)})", file=str(model_folder), field="--checkpoint"
        )
    taken = sorted(set(copies) & {CARD, RECORD, TRAINING_CONFIG})
    if taken:
        raise UserInputError(
            f"holds {', '.join(taken)}, which the export writes itself", file=str(model_folder), field="--checkpoint"
        )
    return copies


def _record(
    checkpoint: VerifiedStep, model_folder: Path, copies: Mapping[str, Path], eval_dir: Path | None
) -> dict[str, Any]:
    """medplay_export.json: the step, where it came from, how it was checked, versions, run, data and scores."""
    root = checkpoint.folder.parent
    run_folder, config = export_facts.read_run_config(root)
    return {
        "step": checkpoint.step,
        "source_checkpoint": str(checkpoint.folder.resolve()),
        "model_folder": str(model_folder.resolve()),
        "manifest_verification": checkpoint.record(),
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "files": {
            "model": sorted(name for name in copies if not name.startswith(f"{ADAPTER_DIR}/")),
            "lora_adapter": sorted(name for name in copies if name.startswith(f"{ADAPTER_DIR}/")) or None,
        },
        "base_model": export_facts.base_model(config),
        "versions": {"training": export_facts.read_versions(run_folder), "export": run_record()},
        "run": {
            "folder": str(run_folder.resolve()) if run_folder else None,
            "config": TRAINING_CONFIG if config is not None else None,
            "settings": {key: export_facts.setting(config, key) for key in export_facts.SETTINGS} if config else {},
        },
        "data": {**export_facts.MEDEC, "inputs": export_facts.data_inputs(config)},
        "evaluation": {
            "validation": export_facts.latest_validation(config, root, checkpoint.step),
            "benchmark": export_facts.benchmark_scores(eval_dir, model_folder) if eval_dir else None,
        },
    }


def _write_config(source: Path, target: Path) -> None:
    """The run's config as saved, redacted again: a config written before a secret's name was known stays safe."""
    import yaml

    config = yaml.safe_load(source.read_text(encoding="utf-8"))
    target.write_text(yaml.safe_dump(redacted(config), sort_keys=False, allow_unicode=True), encoding="utf-8")
