"""A LoRA actor's checkpoint as a PEFT adapter plus a merged Hugging Face model.

With `actor_rollout_ref.model.lora_rank > 0` and `hf_model` in `checkpoint.save_contents`, verl 0.9.1
writes the PEFT model's state dict into `actor/huggingface/model.safetensors` under PEFT's names
(`base_model.model.…base_layer.weight`, `…lora_A.default.weight`), which no loader reads as the
model. `export_lora` turns that folder into what the rest of medplay expects:

- `actor/lora_adapter/`: the adapter in PEFT's format (`adapter_config.json`, `adapter_model.safetensors`),
  loadable with `PeftModel.from_pretrained` or verl's `actor_rollout_ref.model.lora_adapter_path`;
- `actor/huggingface/`: the base weights with the adapter merged in (PEFT's `merge_and_unload`), the
  same HF folder a full fine-tuning run leaves, so `medplay eval`, `medplay.model.path=` and vLLM load it.

The rank and alpha come from verl's `lora_train_meta.json` beside the folder; the adapted modules from
the adapter weights themselves.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

ADAPTER_DIR = "lora_adapter"  # the name verl's model merger gives the adapter folder
HF_DIR = "huggingface"
LORA_META = "lora_train_meta.json"  # written by verl's FSDP checkpoint manager for a PEFT model
PEFT_PREFIX = "base_model.model."
LORA_MARKER = ".lora_"

log = logging.getLogger(__name__)


def _weight_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.safetensors"))


def _load_state(folder: Path) -> dict:
    from safetensors.torch import load_file

    state: dict = {}
    for path in _weight_files(folder):
        state.update(load_file(path))
    return state


def is_peft_export(hf_dir: Path) -> bool:
    """True when the HF folder's weights carry PEFT's LoRA names (verl's export of a LoRA actor)."""
    from safetensors import safe_open

    for path in _weight_files(hf_dir):
        with safe_open(path, framework="pt") as handle:
            if any(LORA_MARKER in key for key in handle.keys()):  # noqa: SIM118 - a safe_open handle is not iterable
                return True
    return False


def adapted_modules(state: dict) -> list[str]:
    """The module names (e.g. `q_proj`) that carry LoRA weights in a PEFT state dict."""
    return sorted({key.split(LORA_MARKER, 1)[0].rsplit(".", 1)[-1] for key in state if LORA_MARKER in key})


def export_lora(actor_dir: Path, base_model: str | None = None) -> bool:
    """Split verl's PEFT-named HF export in `actor_dir` into `lora_adapter/` and a merged `huggingface/`.

    Returns False (and changes nothing) when the folder holds no LoRA export. `base_model` is recorded
    in the adapter's config as the model it adapts.
    """
    import torch
    from accelerate import init_empty_weights
    from peft import LoraConfig, TaskType, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig

    hf_dir = actor_dir / HF_DIR
    if not hf_dir.is_dir() or not is_peft_export(hf_dir):
        return False
    meta = json.loads((actor_dir / LORA_META).read_text())
    state = _load_state(hf_dir)
    config = AutoConfig.from_pretrained(hf_dir)
    lora = LoraConfig(
        task_type=TaskType.CAUSAL_LM,
        r=int(meta["r"]),
        lora_alpha=int(meta["lora_alpha"]),
        target_modules=adapted_modules(state),
        bias="none",
    )
    dtype = next(iter(state.values())).dtype
    with init_empty_weights():
        model = get_peft_model(AutoModelForCausalLM.from_config(config, dtype=dtype), lora)
    model.peft_config["default"].base_model_name_or_path = base_model
    missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    if unexpected:
        raise ValueError(f"{hf_dir}: weights the model does not have: {unexpected[:5]}")
    model.get_base_model().tie_weights()
    still_empty = [name for name, param in model.named_parameters() if param.device == torch.device("meta")]
    if still_empty:
        raise ValueError(f"{hf_dir}: weights missing from the export: {still_empty[:5]} (of {len(missing)})")

    model.save_pretrained(actor_dir / ADAPTER_DIR)
    merged = model.merge_and_unload()
    if (hf_dir / "generation_config.json").is_file():  # keep the one verl copied from the base model
        merged.generation_config = GenerationConfig.from_pretrained(hf_dir)
    for path in _weight_files(hf_dir):
        path.unlink()
    (hf_dir / "model.safetensors.index.json").unlink(missing_ok=True)
    merged.save_pretrained(hf_dir)
    log.info("LoRA checkpoint %s: adapter in %s, merged model in %s", actor_dir, ADAPTER_DIR, HF_DIR)
    return True
