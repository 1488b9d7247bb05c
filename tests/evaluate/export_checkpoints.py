"""Checkpoint folders as training leaves them, built at test time for `medplay export`'s tests.

A run folder from the real composer (`config.yaml`, `versions.json` by `launch.record_run`), data by the real
`medplay convert`, and `global_step_N` folders whose `actor/huggingface` is a tiny model saved with
`save_pretrained`, committed with the trainer's own manifest writer (`mark_complete`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from medical_team.reliability.checkpoints import mark_complete
from medical_team.run_folder.checkpoint_folder import TRACKER_NAME

SECRET = "sk-live-export-0123456789"


def record_run(root: Path) -> None:
    """`root` as `medplay train profile=cpu-smoke` leaves it before training: config.yaml, versions.json, data."""
    from medical_team.cli import main
    from medical_team.launcher.config.compose import compose_config
    from medical_team.launcher.preparation import record_run

    assert main(["convert", "--output", str(root / "data")]) == 0
    overrides = [
        "profile=cpu-smoke",
        f"medplay.output_dir={root}",
        f"medplay.data_dir={root / 'data'}",
        f"+ray_kwargs.ray_init.runtime_env.env_vars.WANDB_API_KEY={SECRET}",
    ]
    record_run(compose_config(overrides))


def lora_adapter(model: Path, output: Path) -> Path:
    """A PEFT LoRA adapter of `model` (rank 2 on q_proj and v_proj), saved as task_runner/lora_export.py saves one."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(model)
    adapted = get_peft_model(base, LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"]))
    adapted.save_pretrained(output)
    return output


def save_step(
    checkpoints: Path, step: int, model: Path, *, adapter: Path | None = None, committed: bool = True
) -> Path:
    """A `global_step_N` folder as verl saves it (actor shards, HF model, dataloader state, tracker), then committed."""
    step_dir = checkpoints / f"global_step_{step}"
    actor = step_dir / "actor"
    actor.mkdir(parents=True)
    (actor / "model_world_size_1_rank_0.pt").write_bytes(b"actor shard")
    shutil.copytree(model, actor / "huggingface")
    if adapter is not None:
        shutil.copytree(adapter, actor / "lora_adapter")
    (step_dir / "data.pt").write_bytes(b"dataloader state")
    (checkpoints / TRACKER_NAME).write_text(str(step))
    if committed:
        mark_complete(step_dir, step)
    return step_dir


def log_metrics(checkpoints: Path, records: list[tuple[int, dict[str, float]]]) -> Path:
    """The metrics file verl's file logger writes: one `{"step", "data"}` line per record."""
    path = checkpoints / "metrics.jsonl"
    with path.open("a", encoding="utf-8") as handle:
        for step, data in records:
            handle.write(json.dumps({"step": step, "data": data}) + "\n")
    return path
