"""A model folder's tokenizer and chat template read with `tokenizers` and `jinja2` alone: no transformers, no torch.

The launcher counts prompt tokens before Ray starts (launcher/plan/prompt_lengths.py, launcher/judge/
judge_context.py); importing transformers' AutoTokenizer for that pulls in torch and costs seconds of CPU on every
run. `light_tokenizer(path)` (a model folder, or a hub id whose snapshot is cached when the Hub is offline) gives
the same token ids where the folder allows it (tokenizer_files.py says when) and None otherwise, for the caller to
load transformers' tokenizer as before:

    tokenizer = light_tokenizer(path) or AutoTokenizer.from_pretrained(path)
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = tokenizer.encode(text, add_special_tokens=False)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from medical_team.models.chat_template import render_chat
from medical_team.models.tokenizer_files import (
    TOKENIZER_JSON,
    TokenizerFiles,
    UnsupportedTokenizer,
    read_tokenizer_files,
)

log = logging.getLogger(__name__)

# apply_chat_template's own parameters: passed as template keyword arguments they would mean something else.
TRANSFORMERS_PARAMETERS = frozenset(
    {
        "chat_template",
        "continue_final_message",
        "padding",
        "truncation",
        "max_length",
        "return_tensors",
        "return_dict",
        "return_assistant_tokens_mask",
        "tokenizer_kwargs",
    }
)


class LightTokenizer:
    """The part of a transformers tokenizer the launcher's checks use: the chat template, and encoding without
    special tokens."""

    def __init__(self, files: TokenizerFiles, backend: Any) -> None:
        self.files = files
        self.backend = backend  # a tokenizers.Tokenizer, without padding or truncation (tokenizer_files.py)
        self.chat_template = files.chat_template

    def apply_chat_template(
        self,
        conversation: Sequence[Mapping[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        documents: list[dict[str, str]] | None = None,
        add_generation_prompt: bool = False,
        tokenize: bool = False,
        **kwargs: Any,
    ) -> str | list[int]:
        """The chat's text as the model's chat template renders it; with `tokenize`, its token ids (as transformers'
        `apply_chat_template(..., tokenize=True, return_dict=False)` gives them)."""
        if unsupported := TRANSFORMERS_PARAMETERS & kwargs.keys():
            raise TypeError(f"the light tokenizer does not take {sorted(unsupported)}")
        text = render_chat(
            self.chat_template,
            conversation,
            self.files.special_tokens,
            add_generation_prompt=add_generation_prompt,
            tools=tools,
            documents=documents,
            **kwargs,
        )
        return self.encode(text, add_special_tokens=False) if tokenize else text

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """The token ids of `text`; only without special tokens (`add_special_tokens=False`), as the checks count."""
        if add_special_tokens:
            raise ValueError("the light tokenizer encodes only with add_special_tokens=False")
        return self.backend.encode(text, add_special_tokens=False).ids


def model_folder(model: str | Path) -> Path | None:
    """The folder transformers reads `model` from: the folder itself, or a hub id's cached snapshot when the Hub is
    offline (HF_HUB_OFFLINE, as in the container); None when transformers would ask the Hub."""
    if Path(model).is_dir():
        return Path(model)
    from huggingface_hub import constants, try_to_load_from_cache

    if not constants.is_offline_mode():
        return None
    try:
        cached = try_to_load_from_cache(str(model), TOKENIZER_JSON)
    except ValueError:  # not a hub id
        return None
    return Path(cached).parent if isinstance(cached, str) else None


def light_tokenizer(
    model: str | Path, trust_remote_code: bool = False, template_kwargs: Mapping[str, Any] | None = None
) -> LightTokenizer | None:
    """The light tokenizer of a model folder or hub id, or None where only transformers reads it (or renders the chat
    template with `template_kwargs`) faithfully."""
    if TRANSFORMERS_PARAMETERS & (template_kwargs or {}).keys():
        return None
    folder = model_folder(model)
    if folder is None:
        return None
    try:
        return LightTokenizer(*read_tokenizer_files(folder, trust_remote_code))
    except UnsupportedTokenizer as reason:
        log.info("tokens counted with transformers' tokenizer for %s: %s", model, reason)
    except Exception as error:  # noqa: BLE001 (an unreadable file: transformers' loading says what is wrong with it)
        log.info("tokens counted with transformers' tokenizer for %s: %s: %s", model, type(error).__name__, error)
    return None
