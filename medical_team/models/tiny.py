"""A tiny random Qwen3 model with a locally trained byte-level BPE tokenizer and a ChatML template.

It stands in for Qwen3-4B on CPU (demo, tests): nothing is downloaded. Built deterministically from
the bundled MEDEC notes in about a second:

    python -m medical_team.models.tiny build/tiny-qwen3
"""

from __future__ import annotations

import csv
import importlib.resources
import sys
from dataclasses import dataclass
from pathlib import Path

from medical_team.models.shape import ModelShape

# Special tokens of Qwen's ChatML; `<|im_end|>` ends every turn and is the EOS token.
PAD_TOKEN = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
# The game's markup is learnt as whole tokens, as in Qwen3's vocabulary.
MARKUP_TOKENS = ("<think>", "</think>", "<answer>", "</answer>")

CHATML_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

TIE_EMBEDDINGS = True  # the output head shares the input embedding, as in Qwen3-4B

_CORPUS_CSV = "MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"


@dataclass(frozen=True)
class TinyModelSpec:
    """Shape of the tiny model; head_dim >= 32 keeps vLLM's CPU attention kernels usable."""

    vocab_size: int = 1024
    hidden_size: int = 64
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 2
    num_key_value_heads: int = 1
    head_dim: int = 32
    max_position_embeddings: int = 4096
    corpus_notes: int = 120
    seed: int = 0
    architecture: str = "qwen3"  # or "qwen2": the two model families the product targets


def tiny_shape(spec: TinyModelSpec | None = None) -> ModelShape:
    """The shape `build_tiny_model` gives the model (for plans made before it is built)."""
    spec = spec or TinyModelSpec()
    return ModelShape(
        name="tiny-qwen3",
        vocab=spec.vocab_size,
        hidden=spec.hidden_size,
        intermediate=spec.intermediate_size,
        layers=spec.num_hidden_layers,
        heads=spec.num_attention_heads,
        kv_heads=spec.num_key_value_heads,
        head_dim=spec.head_dim,
        tie_embeddings=TIE_EMBEDDINGS,
        source="the tiny model's spec (not built yet)",
    )


def _corpus(spec: TinyModelSpec) -> list[str]:
    """Texts the tokenizer is trained on: the first bundled MEDEC notes plus the game's markup."""
    resource = importlib.resources.files("medical_team.data.resources") / _CORPUS_CSV
    with resource.open(encoding="utf-8", newline="") as handle:
        notes = [row["Text"] for _, row in zip(range(spec.corpus_notes), csv.DictReader(handle))]
    return notes + ["verdict: ERROR", "verdict: NO_ERROR", "sentence: error_type: correction:"]


def build_tokenizer(spec: TinyModelSpec):
    """Train a byte-level BPE tokenizer on the bundled notes and wrap it with ChatML special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=spec.vocab_size - len(MARKUP_TOKENS),
        special_tokens=[PAD_TOKEN, IM_START, IM_END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_corpus(spec), trainer=trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token=IM_END,
        pad_token=PAD_TOKEN,
        additional_special_tokens=[IM_START, IM_END],
    )
    wrapped.add_tokens(list(MARKUP_TOKENS))
    wrapped.chat_template = CHATML_TEMPLATE
    return wrapped


def build_tiny_model(output_dir: str | Path, spec: TinyModelSpec = TinyModelSpec()) -> Path:
    """Write a random Qwen3 (or Qwen2) causal LM and its tokenizer as a Hugging Face folder; same spec, same bytes."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM

    families = {"qwen2": (Qwen2Config, Qwen2ForCausalLM), "qwen3": (Qwen3Config, Qwen3ForCausalLM)}
    if spec.architecture not in families:
        raise ValueError(f"architecture {spec.architecture!r} is not one of {', '.join(families)}")
    config_class, model_class = families[spec.architecture]
    output = Path(output_dir)
    tokenizer = build_tokenizer(spec)
    eos_id = tokenizer.convert_tokens_to_ids(IM_END)
    pad_id = tokenizer.convert_tokens_to_ids(PAD_TOKEN)
    config = config_class(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        head_dim=spec.head_dim,
        max_position_embeddings=spec.max_position_embeddings,
        tie_word_embeddings=TIE_EMBEDDINGS,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        bos_token_id=None,
        dtype="float32",
    )
    torch.manual_seed(spec.seed)
    model = model_class(config)
    model.generation_config = GenerationConfig(eos_token_id=eos_id, pad_token_id=pad_id, do_sample=True)
    output.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output)
    tokenizer.save_pretrained(output)
    return output


def main(argv: list[str] | None = None) -> int:
    """Build the tiny model into the folder given as the only argument."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m medical_team.models.tiny OUTPUT_DIR", file=sys.stderr)
        return 2
    print(build_tiny_model(args[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
