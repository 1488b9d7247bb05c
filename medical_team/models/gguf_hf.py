"""A GGUF file (Llama or Gemma 3) -> a float32 Hugging Face folder.

Weights: transformers' own GGUF loader (`gguf_file=`) dequantises them and undoes llama.cpp's q/k
permutation (Llama) or norm offset (Gemma). Tokenizer: rebuilt here from the GGUF vocabulary, because
transformers' GGUF converters get both wrong: its llama converter takes the eos token from
`bos_token_id` (it gives SmolLM2 `<|im_start|>`) and drops the digit splitting of the pre-tokenizer,
and its Gemma converter makes a Unigram model of a SentencePiece BPE vocabulary (Gemma 3 270M's
perplexity on plain English comes out in the thousands) and takes minutes for 262k tokens. Two
vocabularies are supported: byte-level BPE with merges (`gpt2`) and SentencePiece BPE with scores
(`llama`), whose merges are rebuilt from the scores. The eos and pad tokens are set explicitly in
tokenizer, config and generation config.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from medical_team.common.errors import UserInputError
from medical_team.models.registry import SpecialTokens

# GGUF token types (llama.cpp's LLAMA_TOKEN_TYPE_*): normal pieces, control (special) tokens, user-defined
# pieces (matched whole before the BPE, as SentencePiece does) and the byte-fallback pieces <0x00>..<0xFF>.
NORMAL_TOKEN, CONTROL_TOKEN, USER_DEFINED_TOKEN = 1, 3, 4
# SentencePiece's whitespace marker: llama.cpp writes user-defined pieces with plain spaces instead.
SPACE_MARKER = "\u2581"
SUPPORTED_VOCABULARIES = ("gpt2", "llama")

# GGUF metadata value types (gguf-py's GGUFValueType) -> struct formats of the scalar ones.
_STRING, _ARRAY = 8, 9
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


@dataclass(frozen=True)
class GGUFVocabulary:
    """What the converter reads from a GGUF's metadata."""

    architecture: str
    model: str  # tokenizer.ggml.model: `gpt2` (byte-level BPE) or `llama` (SentencePiece BPE)
    tokens: list[str]
    token_types: list[int]
    merges: list[str]  # gpt2 only
    scores: list[float]  # llama only: the higher, the earlier a piece is merged
    bos_id: int | None
    unk_id: int | None
    add_bos: bool
    chat_template: str | None
    context_length: int | None
    licence: str | None


def read_metadata(path: Path) -> dict[str, Any]:
    """A GGUF file's key/value metadata (arrays as lists), read directly: gguf's GGUFReader takes ~20 s on 262k tokens."""
    with path.open("rb") as handle:
        magic, version = struct.unpack("<4sI", handle.read(8))
        if magic != b"GGUF" or version not in (2, 3):
            raise UserInputError(
                f"not a little-endian GGUF v2/v3 file (magic {magic!r}, version {version})", file=str(path)
            )
        _tensors, count = struct.unpack("<QQ", handle.read(16))
        metadata = {}
        for _ in range(count):
            key = _read_string(handle)
            (kind,) = struct.unpack("<I", handle.read(4))
            metadata[key] = _read_value(handle, kind)
    return metadata


def _read_string(handle: BinaryIO) -> str:
    """A GGUF string: a uint64 length, then UTF-8 bytes."""
    (length,) = struct.unpack("<Q", handle.read(8))
    return handle.read(length).decode("utf-8")


def _read_value(handle: BinaryIO, kind: int) -> Any:
    """One metadata value of GGUF type `kind`."""
    if kind == _STRING:
        return _read_string(handle)
    if kind == _ARRAY:
        item_kind, length = struct.unpack("<IQ", handle.read(12))
        if item_kind in _SCALARS:
            fmt = _SCALARS[item_kind]
            return list(struct.unpack(f"<{length}{fmt}", handle.read(length * struct.calcsize(fmt))))
        return [_read_value(handle, item_kind) for _ in range(length)]
    fmt = _SCALARS[kind]
    return struct.unpack(f"<{fmt}", handle.read(struct.calcsize(fmt)))[0]


def read_vocabulary(path: Path) -> GGUFVocabulary:
    """The architecture, vocabulary and chat template of a GGUF file; `UserInputError` for other vocabularies."""
    metadata = read_metadata(path)
    architecture = metadata.get("general.architecture")
    kind = metadata.get("tokenizer.ggml.model")
    merges = metadata.get("tokenizer.ggml.merges")
    scores = metadata.get("tokenizer.ggml.scores")
    if (
        kind not in SUPPORTED_VOCABULARIES
        or (kind == "gpt2" and merges is None)
        or (kind == "llama" and scores is None)
    ):
        raise UserInputError(
            f"tokenizer.ggml.model is {kind!r}: only byte-level BPE ('gpt2' with merges) and SentencePiece BPE "
            "('llama' with scores) vocabularies are supported",
            file=str(path),
        )
    return GGUFVocabulary(
        architecture=str(architecture),
        model=kind,
        tokens=metadata["tokenizer.ggml.tokens"],
        token_types=[int(t) for t in metadata["tokenizer.ggml.token_type"]],
        merges=merges or [],
        scores=scores or [],
        bos_id=metadata.get("tokenizer.ggml.bos_token_id"),
        unk_id=metadata.get("tokenizer.ggml.unknown_token_id"),
        add_bos=bool(metadata.get("tokenizer.ggml.add_bos_token", False)),
        chat_template=metadata.get("tokenizer.chat_template"),
        context_length=metadata.get(f"{architecture}.context_length"),
        licence=metadata.get("general.license"),
    )


def build_tokenizer(
    vocabulary: GGUFVocabulary,
    tokens: SpecialTokens,
    chat_template: str | None = None,
    named_tokens: dict[str, str] | None = None,
) -> Any:
    """A fast tokenizer of the GGUF's vocabulary; `chat_template` stands in where the GGUF carries none.

    `named_tokens` become attributes (`image_token` -> `tokenizer.image_token`); those the vocabulary lacks are
    appended as special tokens after it.
    """
    from tokenizers import AddedToken
    from transformers import PreTrainedTokenizerFast

    present = set(vocabulary.tokens)
    for role, token in (("eos", tokens.eos), ("pad", tokens.pad)):
        if token not in present:
            raise UserInputError(f"the {role} token {token!r} is not in the GGUF vocabulary", field=role)
    backend = _byte_level_bpe(vocabulary) if vocabulary.model == "gpt2" else _sentencepiece_bpe(vocabulary)
    named_tokens = named_tokens or {}
    appended = [token for token in named_tokens.values() if token not in present]
    backend.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in appended])

    def token_at(index: int | None) -> str | None:
        return None if index is None else vocabulary.tokens[index]

    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=token_at(vocabulary.bos_id),
        unk_token=token_at(vocabulary.unk_id),
        eos_token=tokens.eos,
        pad_token=tokens.pad,
        chat_template=vocabulary.chat_template or chat_template,
        model_max_length=vocabulary.context_length or 2048,
        clean_up_tokenization_spaces=False,
        model_specific_special_tokens=named_tokens,
    )


def _byte_level_bpe(vocabulary: GGUFVocabulary) -> Any:
    """Byte-level BPE with the GGUF's merges, digits split one by one (llama.cpp's `smollm` pre-tokenizer)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    ids = {token: index for index, token in enumerate(vocabulary.tokens)}
    merges = [tuple(merge.split(" ", 1)) for merge in vocabulary.merges]
    backend = Tokenizer(models.BPE(ids, merges))
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    backend.decoder = decoders.ByteLevel()
    backend.post_processor = processors.ByteLevel(trim_offsets=False)
    specials = [t for t, kind in zip(vocabulary.tokens, vocabulary.token_types, strict=True) if kind == CONTROL_TOKEN]
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    return backend


def _sentencepiece_bpe(vocabulary: GGUFVocabulary) -> Any:
    """SentencePiece BPE as a `tokenizers` BPE: merges in score order, byte fallback, user pieces matched whole."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, processors

    pieces = [
        token.replace(" ", SPACE_MARKER) if kind == USER_DEFINED_TOKEN else token
        for token, kind in zip(vocabulary.tokens, vocabulary.token_types, strict=True)
    ]
    ids = {piece: index for index, piece in enumerate(pieces)}
    backend = Tokenizer(
        models.BPE(ids, sentencepiece_merges(pieces, vocabulary), unk_token=pieces[vocabulary.unk_id or 0],
                   fuse_unk=True, byte_fallback=True)
    )  # fmt: skip
    backend.normalizer = normalizers.Replace(" ", SPACE_MARKER)
    backend.decoder = decoders.Sequence([decoders.Replace(SPACE_MARKER, " "), decoders.ByteFallback(), decoders.Fuse()])
    kinds = vocabulary.token_types
    backend.add_tokens([
        AddedToken(piece, special=False, normalized=True)
        for piece, kind in zip(pieces, kinds, strict=True) if kind == USER_DEFINED_TOKEN
    ])  # fmt: skip
    backend.add_special_tokens([
        AddedToken(piece, special=True, normalized=False)
        for piece, kind in zip(pieces, kinds, strict=True) if kind == CONTROL_TOKEN
    ])  # fmt: skip
    if vocabulary.add_bos and vocabulary.bos_id is not None:
        bos = pieces[vocabulary.bos_id]
        backend.post_processor = processors.TemplateProcessing(
            single=f"{bos}:0 $A:0", pair=f"{bos}:0 $A:0 {bos}:1 $B:1", special_tokens=[(bos, vocabulary.bos_id)]
        )
    return backend


def sentencepiece_merges(pieces: list[str], vocabulary: GGUFVocabulary) -> list[tuple[str, str]]:
    """Every split of a normal piece into two normal pieces, the best-scored result first (SentencePiece's order)."""
    normal = {
        piece: index
        for index, (piece, kind) in enumerate(zip(pieces, vocabulary.token_types, strict=True))
        if kind == NORMAL_TOKEN
    }
    ranked = []
    for piece, index in normal.items():
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in normal and right in normal:
                ranked.append((-vocabulary.scores[index], index, normal[left], normal[right], left, right))
    ranked.sort()
    return [(left, right) for *_, left, right in ranked]


def load_float32_model(path: Path) -> Any:
    """The GGUF's weights as a float32 transformers model with no quantiser attached (so it saves as plain weights)."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return model


def convert_gguf(path: Path, output: Path, tokens: SpecialTokens, chat_template: str | None = None) -> dict[str, Any]:
    """Write `output` as a Hugging Face folder (safetensors, tokenizer, chat template); return what was converted."""
    from transformers import GenerationConfig

    vocabulary = read_vocabulary(path)
    tokenizer = build_tokenizer(vocabulary, tokens, chat_template)
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
        "vocabulary_kind": vocabulary.model,
        "chat_template_source": "the GGUF" if vocabulary.chat_template else "medplay" if chat_template else None,
    }
