"""One checkpoint's size from the policy's shape: checked against the tiny model's real files.

Run: PYTHONPATH=tests .venv/bin/python -m pytest -q tests/hardware/test_checkpoint_size.py

The whole estimate against a checkpoint verl really wrote is checked in tests/e2e/test_train_cpu.py
(`test_the_kept_checkpoint_is_the_size_the_disk_plan_estimates`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch
from safetensors.torch import load_file

from medical_team.hardware.checkpoint_size import (
    ADAPTER_BYTES,
    SIDE_FILES_BYTES,
    STATE_BYTES,
    checkpoint_bytes,
    checkpoint_parts,
    side_files_bytes,
)
from medical_team.launcher.config.compose import compose_config
from medical_team.launcher.plan.memory_inputs import memory_plan_inputs
from medical_team.models.shape import QWEN3_4B, model_shape
from medical_team.models.tiny import tiny_shape
from medical_team.run.settings import settings_from_trainer_config

EVERYTHING = ["model", "optimizer", "extra", "hf_model"]


def test_the_tiny_specs_shape_is_the_built_models(tiny_model_dir: Path) -> None:
    built = model_shape(str(tiny_model_dir), QWEN3_4B)
    weights = load_file(tiny_model_dir / "model.safetensors")
    assert tiny_shape().params == built.params == sum(tensor.numel() for tensor in weights.values())
    assert dataclasses.replace(tiny_shape(), source=built.source, name=built.name) == built


def test_the_hugging_face_weights_are_the_size_of_the_real_file(tiny_model_dir: Path) -> None:
    config = compose_config(["profile=cpu-smoke", f"medplay.model.path={tiny_model_dir}"])
    inputs = memory_plan_inputs(config, settings_from_trainer_config(config).judge)
    parts = checkpoint_parts(inputs, EVERYTHING, side_files_bytes(str(tiny_model_dir)))
    real = (tiny_model_dir / "model.safetensors").stat().st_size  # fp32, as verl saves the actor's
    assert load_file(tiny_model_dir / "model.safetensors")["model.embed_tokens.weight"].dtype == torch.float32
    assert 0 < real - parts["hf_model"] < 0.01 * real  # the safetensors header on top
    assert parts["optimizer"] == 2 * parts["model"]  # AdamW's two moments of every fp32 parameter
    assert parts["tokenizer and configs"] == sum(
        f.stat().st_size for f in tiny_model_dir.iterdir() if f.suffix != ".safetensors"
    )


def test_lora_trains_and_saves_the_adapters_beside_the_whole_base() -> None:
    config = compose_config(["profile=80g"])
    inputs = memory_plan_inputs(config, settings_from_trainer_config(config).judge)
    adapters = QWEN3_4B.lora_params(inputs.lora_rank, inputs.target_modules)
    parts = checkpoint_parts(inputs, EVERYTHING, SIDE_FILES_BYTES)
    assert inputs.model_dtype == "bf16" and inputs.policy.params == QWEN3_4B.params
    assert parts["hf_model"] == 2 * QWEN3_4B.params + 2 * adapters * ADAPTER_BYTES
    assert 2 * adapters * ADAPTER_BYTES < parts["optimizer"] < 2 * adapters * ADAPTER_BYTES * 1.01
    only_weights = checkpoint_bytes(inputs, ["model"], SIDE_FILES_BYTES)
    assert only_weights == parts["model"] + SIDE_FILES_BYTES + STATE_BYTES


def test_a_model_folder_not_here_gets_the_tokenizer_allowance(tmp_path: Path) -> None:
    assert side_files_bytes(str(tmp_path / "absent")) == SIDE_FILES_BYTES
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 1000)
    (tmp_path / "tokenizer.json").write_bytes(b"{}" * 50)
    assert side_files_bytes(str(tmp_path)) == 100
