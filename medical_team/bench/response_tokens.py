"""Tokens a model generated, counted in the `response` fields of the JSONL that `medplay eval` and `medplay predict`
write (the eval and data-path benchmarks' tokens per second)."""

from __future__ import annotations

import json
from pathlib import Path


def response_tokens(model: Path, responses: Path) -> int:
    """Tokens in the `response` fields of a JSONL file (eval's responses, predict's), by the model's tokenizer."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model)
    lines = [json.loads(line)["response"] for line in responses.read_text(encoding="utf-8").splitlines()]
    return sum(len(tokenizer(text, add_special_tokens=False).input_ids) for text in lines)
