"""A llama-family GGUF file (byte-level BPE vocabulary) -> a float32 Hugging Face folder.

Weights: transformers' own GGUF loader (`gguf_file=`) dequantises them and undoes llama.cpp's q/k
permutation. Tokenizer: rebuilt here from the GGUF vocabulary and merges, because transformers'
GGUF llama tokenizer converter takes the eos token from `bos_token_id` (it gives SmolLM2
`<|im_start|>`) and drops the digit splitting of the original pre-tokenizer. The eos and pad
tokens are set explicitly in tokenizer, config and generation config.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medical_team.errors import UserInputError
from medical_team.models.registry import SpecialTokens

# GGUF token_type of control tokens (llama.cpp's LLAMA_TOKEN_TYPE_CONTROL): the special tokens.
CONTROL_TOKEN = 3


@dataclass(frozen=True)
class GGUFVocabulary:
    """What the converter reads from a GGUF's metadata."""

    architecture: str
    tokens: list[str]
    token_types: list[int]
    merges: list[str]
    bos_id: int | None
    unk_id: int | None
    chat_template: str | None
    context_length: int | None
    licence: str | None


def _field(reader: Any, key: str) -> Any:
    """A metadata value (scalar, string or list), or None when absent."""
    field = reader.fields.get(key)
    return None if field is None else field.contents()


def read_vocabulary(path: Path) -> GGUFVocabulary:
    """The architecture, vocabulary and chat template of a GGUF file; `UserInputError` if it is not byte-level BPE."""
    from gguf import GGUFReader

    reader = GGUFReader(path)
    architecture = _field(reader, "general.architecture")
    kind = _field(reader, "tokenizer.ggml.model")
    if kind != "gpt2" or _field(reader, "tokenizer.ggml.merges") is None:
        raise UserInputError(
            f"tokenizer.ggml.model is {kind!r}: only byte-level BPE ('gpt2' with merges) vocabularies are supported",
            file=str(path),
        )
    return GGUFVocabulary(
        architecture=str(architecture),
        tokens=list(_field(reader, "tokenizer.ggml.tokens")),
        token_types=[int(t) for t in _field(reader, "tokenizer.ggml.token_type")],
        merges=list(_field(reader, "tokenizer.ggml.merges")),
        bos_id=_field(reader, "tokenizer.ggml.bos_token_id"),
        unk_id=_field(reader, "tokenizer.ggml.unknown_token_id"),
        chat_template=_field(reader, "tokenizer.chat_template"),
        context_length=_field(reader, f"{architecture}.context_length"),
        licence=_field(reader, "general.license"),
    )


def build_tokenizer(vocabulary: GGUFVocabulary, tokens: SpecialTokens) -> Any:
    """A fast byte-level BPE tokenizer (digits split one by one, as llama.cpp's `smollm` pre-tokenizer does)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    ids = {token: index for index, token in enumerate(vocabulary.tokens)}
    for role, token in (("eos", tokens.eos), ("pad", tokens.pad)):
        if token not in ids:
            raise UserInputError(f"the {role} token {token!r} is not in the GGUF vocabulary", field=role)
    merges = [tuple(merge.split(" ", 1)) for merge in vocabulary.merges]
    backend = Tokenizer(models.BPE(ids, merges))
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    backend.decoder = decoders.ByteLevel()
    backend.post_processor = processors.ByteLevel(trim_offsets=False)
    specials = [t for t, kind in zip(vocabulary.tokens, vocabulary.token_types, strict=True) if kind == CONTROL_TOKEN]
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])

    def token_at(index: int | None) -> str | None:
        return None if index is None else vocabulary.tokens[index]

    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=token_at(vocabulary.bos_id),
        unk_token=token_at(vocabulary.unk_id),
        eos_token=tokens.eos,
        pad_token=tokens.pad,
        chat_template=vocabulary.chat_template,
        model_max_length=vocabulary.context_length or 2048,
        clean_up_tokenization_spaces=False,
    )


def load_float32_model(path: Path) -> Any:
    """The GGUF's weights as a float32 transformers model with no quantiser attached (so it saves as plain weights)."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return model


def convert_gguf(path: Path, output: Path, tokens: SpecialTokens) -> dict[str, Any]:
    """Write `output` as a Hugging Face folder (safetensors, tokenizer, chat template); return what was converted."""
    from transformers import GenerationConfig

    vocabulary = read_vocabulary(path)
    tokenizer = build_tokenizer(vocabulary, tokens)
    model = load_float32_model(path)
    rows = model.get_input_embeddings().weight.shape[0]
    if rows != len(tokenizer):
        raise UserInputError(
            f"the embedding has {rows} rows but the vocabulary {len(tokenizer)} tokens", file=str(path)
        )
    special_ids = {
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    for key, value in special_ids.items():
        setattr(model.config, key, value)
    model.generation_config = GenerationConfig(**special_ids)
    output.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output)
    tokenizer.save_pretrained(output)
    return {
        "architecture": vocabulary.architecture,
        "model_class": type(model).__name__,
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocabulary": len(tokenizer),
        "tokens": {"bos": tokenizer.bos_token, "eos": tokenizer.eos_token, "pad": tokenizer.pad_token},
        "gguf_licence": vocabulary.licence,
    }
