"""Find the Hugging Face model folder to evaluate: an HF folder, a verl checkpoint, or a locally cached hub id."""

from __future__ import annotations

from pathlib import Path

from medical_team.common.errors import UserInputError
from medical_team.run_folder.checkpoint_folder import read_tracker, step_dirs

WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin", "model*.bin", "*.gguf")


def has_weights(folder: Path) -> bool:
    """True when the folder holds model weight files."""
    return any(next(folder.glob(pattern), None) for pattern in WEIGHT_PATTERNS)


def _merge_hint(actor_dir: Path) -> str:
    """How to turn verl's sharded actor checkpoint into an HF folder."""
    return (
        "it was saved without `hf_model` in checkpoint.save_contents. Export it with "
        f"`python -m verl.model_merger merge --backend fsdp --local_dir {actor_dir} --target_dir {actor_dir}/hf_merged` "
        "and pass that folder, or train with "
        "actor_rollout_ref.actor.checkpoint.save_contents=[model,optimizer,extra,hf_model]"
    )


def _from_actor_dir(actor_dir: Path, field: str = "--model") -> Path:
    """The HF folder inside a verl actor checkpoint folder."""
    for candidate in (actor_dir / "huggingface", actor_dir / "hf_merged"):
        if (candidate / "config.json").is_file() and has_weights(candidate):
            return candidate
    raise UserInputError(
        f"verl checkpoint without Hugging Face weights: {_merge_hint(actor_dir)}", file=str(actor_dir), field=field
    )


def resolve_model(model: str, field: str = "--model") -> Path | str:
    """The local HF folder for `model`, or the hub id itself when it is not a path (loaded from the local cache only).

    Accepts an HF folder (config + weights); a verl checkpoint root (uses the step its tracker names,
    else the newest), a `global_step_N` folder or its `actor` folder, which must hold an HF export.
    Errors name `field`, the option that gave the path.
    """
    path = Path(model).expanduser()
    if not path.exists():
        if model.count("/") == 1 and not model.startswith((".", "/", "~")):
            return model  # a hub id; loading fails clearly if it is not in the local cache
        raise UserInputError("no such file or folder", file=model, field=field)
    if not path.is_dir():
        raise UserInputError("expected a model folder (Hugging Face or verl checkpoint)", file=model, field=field)
    if (path / "config.json").is_file():
        if has_weights(path):
            return path
        if path.name == "huggingface":
            raise UserInputError(
                f"holds the config and tokenizer only: {_merge_hint(path.parent)}", file=model, field=field
            )
        raise UserInputError("has config.json but no weight files (*.safetensors, *.bin)", file=model, field=field)
    if (path / "actor").is_dir():
        return _from_actor_dir(path / "actor", field)
    if path.name == "actor" or next(path.glob("model_world_size_*_rank_*.pt"), None):
        return _from_actor_dir(path, field)
    steps = step_dirs(path)
    if steps:
        tracked = read_tracker(path)
        step = tracked if tracked in steps else max(steps)
        return _from_actor_dir(steps[step] / "actor", field)
    raise UserInputError(
        "not a model folder: expected config.json and weights, or a verl checkpoint (global_step_N/actor)",
        file=model,
        field=field,
    )
