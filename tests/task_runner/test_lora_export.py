"""`export_lora` on a folder laid out as verl 0.9.1 saves a LoRA actor (tests/e2e/test_lora_cpu.py checks verl's own)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from medical_team.task_runner.lora_export import adapted_modules, export_lora, is_peft_export

RANK, ALPHA = 4, 8


def verl_lora_actor_dir(tiny_model_dir: Path, actor_dir: Path) -> None:
    """An actor folder as verl writes it for a LoRA actor: PEFT-named weights in huggingface/, r and alpha beside."""
    from peft import LoraConfig, TaskType, get_peft_model
    from transformers import AutoModelForCausalLM

    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(tiny_model_dir),
        LoraConfig(task_type=TaskType.CAUSAL_LM, r=RANK, lora_alpha=ALPHA, target_modules=["q_proj", "down_proj"]),
    )
    torch.manual_seed(0)
    for name, param in model.named_parameters():
        if "lora_B" in name:  # a trained adapter: B is no longer zero
            param.data.normal_(std=0.5)
    hf_dir = actor_dir / "huggingface"
    shutil.copytree(tiny_model_dir, hf_dir)
    (hf_dir / "model.safetensors").unlink()
    state = {name: t.contiguous() for name, t in model.state_dict().items() if "lm_head" not in name}  # tied
    save_file(state, hf_dir / "model.safetensors")
    (actor_dir / "lora_train_meta.json").write_text(
        json.dumps({"r": RANK, "lora_alpha": ALPHA, "task_type": "CAUSAL_LM"})
    )


def test_export_splits_adapter_and_merged_model(tiny_model_dir: Path, tmp_path: Path) -> None:
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    actor_dir = tmp_path / "actor"
    verl_lora_actor_dir(tiny_model_dir, actor_dir)
    assert is_peft_export(actor_dir / "huggingface")
    assert export_lora(actor_dir, str(tiny_model_dir))

    assert not is_peft_export(actor_dir / "huggingface")
    assert set(load_file(actor_dir / "huggingface" / "model.safetensors")) == set(
        load_file(tiny_model_dir / "model.safetensors")
    )
    config = json.loads((actor_dir / "lora_adapter" / "adapter_config.json").read_text())
    assert (config["r"], config["lora_alpha"], sorted(config["target_modules"])) == (
        RANK,
        ALPHA,
        ["down_proj", "q_proj"],
    )
    assert config["base_model_name_or_path"] == str(tiny_model_dir)

    ids = torch.randint(3, 1000, (1, 30), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        base = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
        base_logits = base(ids).logits
        adapted = PeftModel.from_pretrained(base, actor_dir / "lora_adapter").eval()(ids).logits
        merged = AutoModelForCausalLM.from_pretrained(actor_dir / "huggingface").eval()(ids).logits
    assert (merged - adapted).abs().max().item() < 1e-5
    assert (merged - base_logits).abs().max().item() > 1e-3


def test_full_fine_tuning_export_is_left_alone(tiny_model_dir: Path, tmp_path: Path) -> None:
    actor_dir = tmp_path / "actor"
    shutil.copytree(tiny_model_dir, actor_dir / "huggingface")
    before = (actor_dir / "huggingface" / "model.safetensors").read_bytes()
    assert not export_lora(actor_dir)
    assert (actor_dir / "huggingface" / "model.safetensors").read_bytes() == before
    assert not (actor_dir / "lora_adapter").exists()


def test_adapted_modules_are_read_from_the_weight_names() -> None:
    state = {
        "base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight": None,
        "base_model.model.model.layers.0.self_attn.q_proj.base_layer.weight": None,
        "base_model.model.model.layers.1.mlp.up_proj.lora_B.default.weight": None,
    }
    assert adapted_modules(state) == ["q_proj", "up_proj"]


def test_missing_meta_file_is_an_error(tiny_model_dir: Path, tmp_path: Path) -> None:
    actor_dir = tmp_path / "actor"
    verl_lora_actor_dir(tiny_model_dir, actor_dir)
    (actor_dir / "lora_train_meta.json").unlink()
    with pytest.raises(FileNotFoundError):
        export_lora(actor_dir)
