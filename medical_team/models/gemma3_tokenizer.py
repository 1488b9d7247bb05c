"""The real Gemma 3 tokenizer, read from the pinned GGUF package, for the random judges `gemma3` builds.

Apart from `gemma3` because it reads the registry's `gemma3-270m` entry, whose chat format is `gemma3`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from medical_team.models.gemma3 import IMAGE_TOKENS
from medical_team.models.gguf_hf import build_tokenizer, read_vocabulary
from medical_team.models.packaged import locate
from medical_team.models.registry import get_model

TOKENIZER_MODEL = "gemma3-270m"  # the registry model whose GGUF carries the Gemma 3 tokenizer


def judge_tokenizer(scratch: Path) -> Any:
    """The real Gemma 3 tokenizer from the pinned GGUF package, with the multimodal tokenizer's image tokens.

    The GGUF is joined from its chunk packages in `scratch` (and removed there after reading).
    """
    model = get_model(TOKENIZER_MODEL)
    path = locate(model.source, scratch)
    try:
        vocabulary = read_vocabulary(path)
    finally:
        path.unlink()
    return build_tokenizer(vocabulary, model.tokens, model.chat_template, named_tokens=IMAGE_TOKENS)
