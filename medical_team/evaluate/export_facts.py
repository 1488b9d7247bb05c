"""What `medplay export` says about a checkpoint: its run's config and versions, base model, data and latest scores.

Everything is read from what training left beside the checkpoints (`launcher/launch.py`, `record_run`: the run
folder's `config.yaml`, redacted, and `versions.json`; the metrics file; `medplay convert`'s `dataset_report.json`)
and, when given, a `medplay eval` folder of the same checkpoint. A fact that is not on disk is recorded as missing
(None), never guessed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from medical_team.common.errors import UserInputError
from medical_team.evaluate.model_source import resolve_model
from medical_team.models.registry import MODELS
from medical_team.run_folder.metrics_records import read_step_records

RUN_CONFIG = "config.yaml"  # launch.record_run writes both into medplay.output_dir
RUN_VERSIONS = "versions.json"
METRICS_FILE = "metrics.jsonl"  # medplay.metrics_file's default: ${trainer.default_local_dir}/metrics.jsonl
DATASET_REPORT = "dataset_report.json"  # medplay convert, beside train.parquet
EVAL_JSON = "eval.json"
SOURCE_MD = "SOURCE.md"  # `medplay model prepare` writes it into the model folder, its first line `# NAME`
VALIDATION_PREFIXES = ("val-core/", "val-aux/")  # verl's validation metrics
# The training settings the card's table shows (the whole config ships as training_config.yaml).
SETTINGS = (
    "medplay.training_mode",
    "medplay.adversarial_games",
    "medplay.judge.backend",
    "medplay.rewards.scheme",
    "algorithm.adv_estimator",
    "actor_rollout_ref.actor.optim.lr",
    "actor_rollout_ref.actor.use_kl_loss",
    "actor_rollout_ref.actor.kl_loss_coef",
    "actor_rollout_ref.model.lora_rank",
    "actor_rollout_ref.model.lora_alpha",
    "actor_rollout_ref.rollout.n",
    "data.train_batch_size",
    "data.max_prompt_length",
    "data.max_response_length",
    "data.train_files",
    "trainer.total_training_steps",
    "trainer.total_epochs",
)
EVAL_SCORES = (
    "error_flag_accuracy",
    "error_sentence_accuracy",
    "correction_rouge1_f1",
    "format_violation_rate",
)
# Hugging Face's licence identifiers of the licences `models/registry.py` names.
HUB_LICENCES = {"Apache-2.0": "apache-2.0", "Gemma Terms of Use": "gemma"}

# MEDEC-MS as bundled (medical_team/data/resources/SOURCE.md); tests/evaluate/test_export.py checks them against it.
MEDEC = {
    "name": "MEDEC-MS",
    "source": "https://github.com/abachaa/MEDEC",
    "commit": "70268d24e3ce0cd6d0e099ff7bfd4966f2bbcc28",
    "licence": "CC BY 4.0",
    "licence_url": "https://creativecommons.org/licenses/by/4.0/",
    "citation": "Asma Ben Abacha, Wen-wai Yim, Yujuan Fu, Zhaoyi Sun, Meliha Yetisgen, Fei Xia, Thomas Lin. 2025. "
    "MEDEC: A Benchmark for Medical Error Detection and Correction in Clinical Notes. Findings of ACL 2025, "
    "pp. 22539-22550. https://aclanthology.org/2025.findings-acl.1159/",
}


def setting(config: Mapping[str, Any] | None, dotted: str) -> Any:
    """A value of the run's config by its dotted key, or None when the config or the key is missing."""
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def read_run_config(checkpoint_root: Path) -> tuple[Path | None, dict[str, Any] | None]:
    """The run folder and its saved config, when the folder beside the checkpoints is the run that wrote them.

    `trainer.default_local_dir` is `${medplay.output_dir}/checkpoints` unless overridden: the config in the parent
    of the checkpoint root counts only when its `trainer.default_local_dir` names that root.
    """
    import yaml

    path = checkpoint_root.parent / RUN_CONFIG
    if not path.is_file():
        return None, None
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise UserInputError(f"not YAML ({error})", file=str(path)) from None
    if not isinstance(config, dict):
        raise UserInputError("expected a mapping (the config `medplay train` saved)", file=str(path))
    named = setting(config, "trainer.default_local_dir")
    if named is not None and Path(str(named)).resolve() != checkpoint_root.resolve():
        return None, None
    return path.parent, config


def read_versions(run_folder: Path | None) -> dict[str, Any] | None:
    """The stack versions the run recorded when it started (versions.json), or None."""
    path = run_folder / RUN_VERSIONS if run_folder else None
    if path is None or not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise UserInputError(f"not JSON ({error.msg})", file=str(path), row=error.lineno) from None


def base_model(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The model training started from: its path, and its hub id and licence where they are known."""
    path = setting(config, "actor_rollout_ref.model.path")
    facts: dict[str, Any] = {"path": path, "hub_id": None, "licence": None, "licence_id": "other", "prepared": None}
    facts["tiny_random"] = bool(setting(config, "medplay.model.build_tiny"))
    if path is None or facts["tiny_random"]:
        return facts
    folder = Path(str(path)).expanduser()
    source = folder / SOURCE_MD
    if source.is_file():  # a folder `medplay model prepare` built: the registry knows its upstream and licence
        name = source.read_text(encoding="utf-8").partition("\n")[0].removeprefix("# ").strip()
        if name in MODELS:
            model = MODELS[name]
            facts.update(prepared=name, hub_id=model.upstream, licence=model.source.licence)
            facts["licence_id"] = HUB_LICENCES.get(model.source.licence, "other")
    elif not folder.exists():
        try:
            resolved = resolve_model(str(path))
        except UserInputError:  # a local folder no longer here
            resolved = None
        if isinstance(resolved, str):  # a hub id loaded from the local cache; its licence is the hub's to state
            facts["hub_id"] = resolved
    return facts


def data_inputs(config: Mapping[str, Any] | None) -> list[dict[str, Any]] | None:
    """The MEDEC files the training data was converted from (`dataset_report.json` beside train.parquet), or None."""
    train_files = setting(config, "data.train_files")
    first = train_files[0] if isinstance(train_files, list) and train_files else train_files
    if not isinstance(first, str):
        return None
    path = Path(first).parent / DATASET_REPORT
    if not path.is_file():
        return None
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise UserInputError(f"not JSON ({error.msg})", file=str(path), row=error.lineno) from None
    keys = ("file", "notes", "error_notes", "clean_notes", "rows_skipped")
    return [{key: item.get(key) for key in keys} for item in report.get("inputs", []) if isinstance(item, dict)]


def latest_validation(config: Mapping[str, Any] | None, checkpoint_root: Path, step: int) -> dict[str, Any] | None:
    """verl's validation metrics of the latest step at or before `step` that has them, from the run's metrics file."""
    named = setting(config, "medplay.metrics_file")
    path = Path(str(named)) if named else checkpoint_root / METRICS_FILE
    if not path.is_file():
        return None
    records = read_step_records(path)
    for logged in sorted((s for s in records.steps if s <= step), reverse=True):
        metrics = {k: v for k, v in records.steps[logged].items() if k.startswith(VALIDATION_PREFIXES)}
        if metrics:
            return {"step": logged, "metrics_file": str(path), "metrics": dict(sorted(metrics.items()))}
    return None


def benchmark_scores(eval_dir: Path, model_folder: Path) -> dict[str, Any]:
    """The scores of a `medplay eval` folder that evaluated `model_folder`; `UserInputError` for another model's."""
    path = eval_dir / EVAL_JSON
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserInputError(
            "not found; give a folder written by `medplay eval`", file=str(path), field="--eval"
        ) from None
    except json.JSONDecodeError as error:
        raise UserInputError(f"not JSON ({error.msg})", file=str(path), row=error.lineno) from None
    evaluated = result.get("resolved_model") if isinstance(result, dict) else None
    if not isinstance(evaluated, str):
        raise UserInputError(
            "missing; was this written by `medplay eval --model`?", file=str(path), field="resolved_model"
        )
    if Path(evaluated).resolve() != model_folder.resolve():
        raise UserInputError(
            f"evaluated {evaluated}, not this checkpoint's model {model_folder}: evaluate it with "
            f"`medplay eval --model {model_folder.parent.parent}`",
            file=str(path),
            field="resolved_model",
        )
    official = result.get("official") or {}
    return {
        "eval_dir": str(eval_dir),
        "benchmark": result.get("benchmark"),
        "notes": result.get("notes"),
        "backend": result.get("backend"),
        "scores": {key: result.get(key) for key in EVAL_SCORES},
        "official_r1fc": official.get("R1FC"),
        "baselines": {
            name: {key: scores.get(key) for key in EVAL_SCORES[:3]}
            for name, scores in (result.get("baselines") or {}).items()
            if isinstance(scores, dict)
        },
    }
