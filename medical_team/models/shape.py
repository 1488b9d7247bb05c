"""Model shapes: a decoder's sizes (from a model folder's config.json, or the known shapes the profiles name).

What the GPU memory plan (`medical_team.hardware.memory_plan`) sizes weights, activations, logits and KV cache
from, and the shape `gemma3.judge_config` gives a random MedGemma 4B judge.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

GIB = 1024**3


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer's shape: what the plan needs to size weights, activations, logits and KV cache."""

    name: str
    vocab: int
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    tie_embeddings: bool
    # Parameters outside the decoder (e.g. a vision tower), kept in bf16.
    extra_params: int = 0
    source: str = "known shape"

    @property
    def linear_params_per_layer(self) -> int:
        """Parameters of one layer's linear projections (q, k, v, o, gate, up, down)."""
        attention = 2 * self.hidden * self.heads * self.head_dim + 2 * self.hidden * self.kv_heads * self.head_dim
        return attention + 3 * self.hidden * self.intermediate

    @property
    def embedding_params(self) -> int:
        """Input embedding plus the output head when it is not tied."""
        return self.vocab * self.hidden * (1 if self.tie_embeddings else 2)

    @property
    def params(self) -> int:
        """All parameters (decoder layers with their norms, embeddings, final norm, extra)."""
        norms = 2 * self.hidden + 2 * self.head_dim
        return (
            self.layers * (self.linear_params_per_layer + norms)
            + self.embedding_params
            + self.hidden
            + self.extra_params
        )

    @property
    def kv_bytes_per_token(self) -> int:
        """bf16 KV cache of one token over all layers."""
        return 2 * self.layers * self.kv_heads * self.head_dim * 2

    def lora_params(self, rank: int, target_modules: str | Sequence[str]) -> int:
        """Adapter parameters of rank `rank` on the targeted linear layers (`all-linear` or module names)."""
        q_out, kv_out = self.heads * self.head_dim, self.kv_heads * self.head_dim
        sizes = {
            "q_proj": self.hidden + q_out,
            "k_proj": self.hidden + kv_out,
            "v_proj": self.hidden + kv_out,
            "o_proj": q_out + self.hidden,
            "gate_proj": self.hidden + self.intermediate,
            "up_proj": self.hidden + self.intermediate,
            "down_proj": self.intermediate + self.hidden,
        }
        names = sizes if isinstance(target_modules, str) and target_modules == "all-linear" else target_modules
        names = [names] if isinstance(names, str) else names
        return rank * self.layers * sum(sizes.get(name.split(".")[-1], 0) for name in names)

    @property
    def language_model(self) -> ModelShape:
        """The text decoder alone: what the served judge loads (vLLM's `--language-model-only`, no vision tower)."""
        return replace(self, extra_params=0)

    def weights_gib(self, quantization: str | None = None) -> float:
        """Serving weights: bf16, or with fp8 the decoder's linear layers in one byte each."""
        if quantization == "fp8":
            linear = self.layers * self.linear_params_per_layer
            return (linear + 2 * (self.params - linear)) / GIB
        return 2 * self.params / GIB


# Shapes of the models the profiles name, for when the model folder is not on this machine.
QWEN3_4B = ModelShape("Qwen3-4B", 151936, 2560, 9728, 36, 32, 8, 128, tie_embeddings=True)
# MedGemma 4B (Gemma 3): the text decoder plus its SigLIP vision tower (27 layers of 1,152 / 4,304) and projector.
MEDGEMMA_4B = ModelShape(
    "MedGemma-4B",
    262208,
    2560,
    10240,
    34,
    8,
    4,
    256,
    tie_embeddings=True,
    extra_params=27 * (4 * 1152**2 + 2 * 1152 * 4304) + 1152 * 2560,
)
KNOWN_SHAPES = {"qwen3-4b": QWEN3_4B, "medgemma-4b": MEDGEMMA_4B}


def shape_from_config(config: Mapping, name: str) -> ModelShape:
    """A model's shape from its Hugging Face config.json (a multimodal one: its text_config plus vision tower)."""
    text = config.get("text_config") or config
    heads = int(text["num_attention_heads"])
    extra = 0
    if vision := config.get("vision_config"):
        width, inner = int(vision["hidden_size"]), int(vision["intermediate_size"])
        extra = int(vision["num_hidden_layers"]) * (4 * width**2 + 2 * width * inner) + width * int(text["hidden_size"])
    return ModelShape(
        name=name,
        vocab=int(text.get("vocab_size") or config["vocab_size"]),
        hidden=int(text["hidden_size"]),
        intermediate=int(text["intermediate_size"]),
        layers=int(text["num_hidden_layers"]),
        heads=heads,
        kv_heads=int(text.get("num_key_value_heads") or heads),
        head_dim=int(text.get("head_dim") or int(text["hidden_size"]) // heads),
        tie_embeddings=bool(config.get("tie_word_embeddings", text.get("tie_word_embeddings", True))),
        extra_params=extra,
        source="config.json",
    )


def model_shape(path: str, default: ModelShape) -> ModelShape:
    """The shape of the model at `path`: its config.json when the folder is here, else a known shape by name."""
    config_file = Path(path).expanduser() / "config.json"
    if config_file.is_file():
        return shape_from_config(json.loads(config_file.read_text(encoding="utf-8")), Path(path).name)
    lowered = path.lower()
    for key, shape in KNOWN_SHAPES.items():
        if key in lowered:
            return ModelShape(**{**shape.__dict__, "source": f"known shape ({path} is not on this machine)"})
    return ModelShape(**{**default.__dict__, "source": f"assumed {default.name} ({path} is not on this machine)"})
