"""What a run checks and prepares before its judge and Ray start: its data and model, its folder's records, its checkpoints."""

from __future__ import annotations

import json
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from medical_team.common.errors import UserInputError
from medical_team.launcher.console.console import say


def check_data(data: DictConfig, section: str = "data") -> None:
    """Fail before anything starts when a parquet file of the data `section` (train_files, val_files) is missing."""
    for key in ("train_files", "val_files"):
        path = Path(data[key])
        if not path.is_file():
            raise UserInputError(
                f"not found; write it with `medplay convert --output {path.parent}` or set medplay.data_dir",
                file=str(path),
                field=f"{section}.{key}",
            )


def check_model(config: DictConfig) -> None:
    """Fail before Ray starts when a local model folder is missing (hub ids are left to the HF cache)."""
    model_path = Path(config.medplay.model.path)
    if model_path.is_absolute() and not (model_path / "config.json").is_file():
        raise UserInputError(
            "no Hugging Face model here; set medplay.model.path or medplay.model.build_tiny=true",
            file=str(model_path),
            field="medplay.model.path",
        )


def prepare_model(config: DictConfig) -> None:
    """Build the tiny model into medplay.model.path when the profile asks for it and it is missing."""
    model_path = Path(config.medplay.model.path)
    if config.medplay.model.build_tiny and not (model_path / "config.json").is_file():
        from medical_team.models.tiny import build_tiny_model

        build_tiny_model(model_path)
        say(f"medplay: built the tiny random model in {model_path}")


def save_config(config: DictConfig, path: Path) -> None:
    """Write `config` as YAML, the values of secret-named settings redacted (`run/redaction.py`)."""
    from medical_team.run.redaction import redacted

    OmegaConf.save(OmegaConf.create(redacted(OmegaConf.to_container(config))), path)


def record_run(config: DictConfig) -> None:
    """Write the composed config and what the run ran on (versions, image tag, git commit) into the output folder."""
    from medical_team.run.stack import run_record

    output = Path(config.medplay.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    # verl's file logger opens the metrics file without creating its folder.
    Path(config.medplay.metrics_file).parent.mkdir(parents=True, exist_ok=True)
    save_config(config, output / "config.yaml")
    (output / "versions.json").write_text(json.dumps(run_record(), indent=2) + "\n")


def prepare_checkpoints(config: DictConfig) -> None:
    """Remove step folders without weights, point verl's tracker at the newest complete checkpoint, set aside the
    metrics of steps the resume replays, and forget an old stop request."""
    from medical_team.reliability.checkpoints import WEIGHTLESS, repair_tracker
    from medical_team.reliability.replayed_steps import replayed_file, set_aside_replayed_steps
    from medical_team.reliability.retention import remove_husks
    from medical_team.reliability.stop_request import clear_stop_request

    checkpoint_dir = Path(config.trainer.default_local_dir)
    removed = remove_husks(checkpoint_dir)
    if removed:
        names = ", ".join(f"global_step_{step}" for step in removed)
        say(f"medplay: removed {names} from {checkpoint_dir}: each {WEIGHTLESS}, so it is no checkpoint")
    if config.trainer.resume_mode == "auto":
        repair = repair_tracker(checkpoint_dir, trust_unverified=config.medplay.trust_unverified_checkpoints)
        for line in repair.messages():
            say(f"medplay: {line}")
        if repair.resume_step is None and repair.unverified:
            raise UserInputError(
                f"global_step_{repair.unverified[-1]} has no manifest of its files (written by plain verl, an older "
                "medplay or elsewhere): resuming would unpickle its files, which can run code. If you trust it, "
                "rerun with medplay.trust_unverified_checkpoints=true; else move it away or use another output folder",
                file=str(checkpoint_dir),
            )
        if repair.resume_step is not None:
            say(f"medplay: resuming from {checkpoint_dir / f'global_step_{repair.resume_step}'}")
        metrics_file = Path(config.medplay.metrics_file)
        if moved := set_aside_replayed_steps(metrics_file, repair.resume_step):
            after = "every step" if repair.resume_step is None else f"steps after {repair.resume_step}"
            say(f"medplay: {moved} metrics records of {after} moved to {replayed_file(metrics_file)} (replayed now)")
    clear_stop_request(checkpoint_dir)
