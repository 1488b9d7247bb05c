"""What a model folder's tokenizer files say, and whether transformers would tokenize with its tokenizer.json as is.

`AutoTokenizer.from_pretrained` (transformers 5.x) builds the backend from tokenizer.json unchanged for the generic
classes (`TokenizersBackend`, alias `PreTrainedTokenizerFast`); a class with its own constructor (e.g. `Qwen2Tokenizer`,
which a `qwen2` config imposes even on a generic folder) rebuilds it from the vocabulary and merges with its own
normaliser and pre-tokeniser, and then adds the tokens tokenizer_config.json names. So a folder is read here only when
the backend transformers builds tokenizes as tokenizer.json does: a generic class (or `Qwen2Tokenizer` whose
tokenizer.json is Qwen2's own pipeline) for a model type whose class resolution is known, every special token already an
added token of tokenizer.json, and nothing that changes tokenization (`split_special_tokens`, legacy token files,
padding or truncation, remote code). Anything else raises UnsupportedTokenizer and the caller loads the tokenizer with
transformers. tests/models/test_light_tokenizer.py checks the class resolution and the Qwen2 pipeline against the
installed transformers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TOKENIZER_JSON = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
CHAT_TEMPLATE_FILE = "chat_template.jinja"
CHAT_TEMPLATES_DIR = "additional_chat_templates"
LEGACY_FILES = ("special_tokens_map.json", "added_tokens.json")  # read by transformers only without a token list

GENERIC = "TokenizersBackend"
QWEN2 = "Qwen2Tokenizer"
# tokenizer_config.json's `tokenizer_class` (without "Fast") -> the class transformers resolves it to.
CLASSES = {"TokenizersBackend": GENERIC, "PreTrainedTokenizer": GENERIC, QWEN2: QWEN2}
# config.json's `model_type` -> the class it imposes on any tokenizer_config.json class (None: none, the folder's
# class stands). Other model types fall back to transformers. "" is a folder without config.json.
MODEL_TYPES: dict[str, str | None] = {
    "": None, "llama": None, "qwen3": None, "qwen3_moe": None, "gemma3": None, "gemma3_text": None, "qwen2": QWEN2,
}  # fmt: skip
NAMED_TOKENS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
QWEN2_DEFAULT_TOKENS = {"unk_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"}
# Qwen2's pre-tokenisation pattern, as Qwen's tokenizer.json files carry it.
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
TOKEN_FLAGS = ("single_word", "lstrip", "rstrip", "normalized", "special")


class UnsupportedTokenizer(ValueError):
    """A tokenizer folder that only transformers reads faithfully: the reason."""


@dataclass(frozen=True)
class TokenizerFiles:
    """A tokenizer folder as the light tokenizer needs it."""

    chat_template: str
    special_tokens: dict[str, str]  # the template's token variables: bos_token, eos_token, ... and model-specific
    tokenizer_class: str  # the class transformers resolves the folder to (GENERIC or QWEN2)


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from a file ({} when the file is missing)."""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def token_text(value: Any) -> str | None:
    """A token as tokenizer_config.json writes it (a string, or an AddedToken's dict) as text."""
    return value.get("content") if isinstance(value, dict) else value


def chat_template(folder: Path, config: dict[str, Any]) -> str:
    """The default chat template: chat_template.jinja first, then tokenizer_config.json's `chat_template`."""
    if (folder / CHAT_TEMPLATE_FILE).is_file():
        return (folder / CHAT_TEMPLATE_FILE).read_text(encoding="utf-8")
    if any((folder / CHAT_TEMPLATES_DIR).glob("*.jinja")):
        raise UnsupportedTokenizer(f"named chat templates in {CHAT_TEMPLATES_DIR}/ and no default one")
    template = config.get("chat_template")
    if isinstance(template, list):
        template = {entry["name"]: entry["template"] for entry in template}.get("default")
    if not isinstance(template, str):
        raise UnsupportedTokenizer("no default chat template")
    return template


def resolved_class(folder: Path, config: dict[str, Any]) -> str:
    """The tokenizer class transformers builds for the folder (GENERIC or QWEN2), or UnsupportedTokenizer."""
    model_config = read_json(folder / "config.json")
    if "auto_map" in config or "auto_map" in model_config:
        raise UnsupportedTokenizer("remote code (auto_map)")
    if model_config and "model_type" not in model_config:
        raise UnsupportedTokenizer("config.json names no model_type")
    model_type = model_config.get("model_type", "")
    named = str(config.get("tokenizer_class") or "").removesuffix("Fast")
    if model_type not in MODEL_TYPES or named not in CLASSES:
        raise UnsupportedTokenizer(f"tokenizer class {named or None} for model type {model_type or None}")
    return MODEL_TYPES[model_type] or CLASSES[named]


def special_tokens(config: dict[str, Any], tokenizer_class: str) -> tuple[dict[str, str], list[str]]:
    """The named and model-specific special tokens (the template's variables), and every special token's text."""
    named = dict(QWEN2_DEFAULT_TOKENS) if tokenizer_class == QWEN2 else {}
    named.update({key: config[key] for key in NAMED_TOKENS if key in config})
    specific = {k: v for k, v in config.items() if k.endswith("_token") and k not in NAMED_TOKENS and isinstance(v, str)}
    extra = config.get("extra_special_tokens", config.get("additional_special_tokens")) or []
    if isinstance(extra, dict):
        specific.update(extra)
        extra = []
    specific = specific or dict(config.get("model_specific_special_tokens") or {})  # when no key names one
    variables = {key: text for key, value in {**named, **specific}.items() if (text := token_text(value)) is not None}
    return variables, [*variables.values(), *(str(token_text(token)) for token in extra)]


def flags(token: dict[str, Any]) -> tuple[Any, ...]:
    """An added token's text and flags as tokenizer_config.json lists it, with AddedToken's defaults."""
    special = bool(token.get("special", False))
    defaults = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": not special, "special": special}
    return (token["content"], *(token.get(name, defaults[name]) for name in TOKEN_FLAGS))


def added_tokens(backend: Any) -> dict[int, tuple[Any, ...]]:
    """The backend's added tokens by id: text and flags."""
    return {
        index: (token.content, *(getattr(token, name) for name in TOKEN_FLAGS))
        for index, token in backend.get_added_tokens_decoder().items()
    }


def check_added_tokens(folder: Path, config: dict[str, Any], backend: Any, specials: list[str]) -> None:
    """UnsupportedTokenizer unless transformers would add no token to tokenizer.json's and change none."""
    added = added_tokens(backend)
    listed = config.get("added_tokens_decoder")
    if listed is None:
        if any((folder / name).is_file() for name in LEGACY_FILES):
            raise UnsupportedTokenizer("legacy token files")
    elif any(added.get(int(index)) != flags(token) for index, token in listed.items()):
        raise UnsupportedTokenizer("added_tokens_decoder differs from tokenizer.json's added tokens")
    contents = {token[0] for token in added.values()}
    if missing := [token for token in specials if token not in contents]:
        raise UnsupportedTokenizer(f"special tokens not among the added tokens: {missing}")


def state(component: Any) -> Any:
    """A backend component (normaliser, pre-tokeniser) as tokenizer.json writes it (None when absent)."""
    return None if component is None else json.loads(component.__getstate__())


def check_qwen2_pipeline(config: dict[str, Any], backend: Any) -> None:
    """UnsupportedTokenizer unless tokenizer.json is the pipeline Qwen2Tokenizer rebuilds from its vocabulary."""
    model = backend.model
    split, byte_level = {}, {}
    steps = (state(backend.pre_tokenizer) or {}).get("pretokenizers") or []
    if len(steps) == 2:
        split, byte_level = steps
    if not (
        type(model).__name__ == "BPE"
        and (model.dropout, model.unk_token, model.fuse_unk, model.byte_fallback) == (None, None, False, False)
        and not model.ignore_merges
        and not model.continuing_subword_prefix
        and not model.end_of_word_suffix
        and state(backend.normalizer) == {"type": "NFC"}
        and split == {"type": "Split", "pattern": {"Regex": QWEN2_SPLIT}, "behavior": "Isolated", "invert": False}
        and byte_level.get("type") == "ByteLevel"
        and byte_level.get("use_regex") is False
        and byte_level.get("add_prefix_space") == bool(config.get("add_prefix_space") or False)
    ):
        raise UnsupportedTokenizer("tokenizer.json is not Qwen2Tokenizer's pipeline")


def check_qwen2_added_tokens(config: dict[str, Any], backend: Any, specials: list[str]) -> None:
    """UnsupportedTokenizer unless Qwen2Tokenizer's rebuild gives tokenizer.json's added tokens their own ids."""
    listed = config.get("added_tokens_decoder")
    added = added_tokens(backend)
    if listed is not None and set(map(int, listed)) != set(added):
        raise UnsupportedTokenizer("added_tokens_decoder lists other tokens than tokenizer.json")
    size = backend.get_vocab_size(with_added_tokens=False)
    in_model = {index: backend.model.token_to_id(token[0]) for index, token in added.items()}
    new = sorted(index for index, model_id in in_model.items() if model_id is None)
    if new != list(range(size, size + len(new))) or any(
        model_id not in (None, index) for index, model_id in in_model.items()
    ):
        raise UnsupportedTokenizer("added tokens whose ids a rebuild would change")
    by_text = {token[0]: token for token in added.values()}
    if any(by_text[token][1:] != (False, False, False, False, True) for token in specials):
        raise UnsupportedTokenizer("a special token with flags Qwen2Tokenizer would reset")


def read_tokenizer_files(folder: Path, trust_remote_code: bool = False) -> tuple[TokenizerFiles, Any]:
    """The folder's tokenizer files and its backend (a `tokenizers.Tokenizer`), or UnsupportedTokenizer saying why
    they are not read here."""
    from tokenizers import Tokenizer

    if trust_remote_code:
        raise UnsupportedTokenizer("trust_remote_code")
    if not (folder / TOKENIZER_JSON).is_file():
        raise UnsupportedTokenizer(f"no {TOKENIZER_JSON}")
    config = read_json(folder / TOKENIZER_CONFIG)
    for key in ("split_special_tokens", "fix_mistral_regex", "fast_tokenizer_files", "tokenizer_file"):
        if config.get(key):
            raise UnsupportedTokenizer(f"{TOKENIZER_CONFIG} sets {key}")
    template = chat_template(folder, config)
    tokenizer_class = resolved_class(folder, config)
    backend = Tokenizer.from_file(str(folder / TOKENIZER_JSON))
    if backend.padding is not None or backend.truncation is not None:
        raise UnsupportedTokenizer(f"{TOKENIZER_JSON} sets padding or truncation")
    variables, specials = special_tokens(config, tokenizer_class)
    check_added_tokens(folder, config, backend, specials)
    if tokenizer_class == QWEN2:
        check_qwen2_pipeline(config, backend)
        check_qwen2_added_tokens(config, backend, specials)
    return TokenizerFiles(template, variables, tokenizer_class), backend
