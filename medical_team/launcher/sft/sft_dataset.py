"""verl SFT dataset over medplay's SFT parquet: each prompt tokenized exactly as the game renders it.

verl's own `MultiTurnSFTDataset` applies the chat template per message; the game instead continues
`chat template + thinking prefix` (`game.prompts.render_prompt`) and decodes what follows. Here the
prompt is that same text, tokenized as the agent loop tokenizes it, and the target is the response
(the continuation after the prefix) plus the end-of-turn token; only the target is trained.
Selected in configs/sft/base.yaml through verl's `data.custom_cls`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import torch
from torch.utils.data import Dataset

from medical_team.data.sft_parquet import read_sft_parquet
from medical_team.game.prompts import render_prompt

logger = logging.getLogger(__name__)


def tokenize_example(tokenizer: Any, messages: list[dict[str, str]], response: str) -> tuple[list[int], list[int]]:
    """(prompt ids, target ids): the game's rendered prompt, then the response and the end-of-turn token."""
    prompt = tokenizer.encode(render_prompt(tokenizer, messages), add_special_tokens=False)
    target = tokenizer.encode(response, add_special_tokens=False) + [tokenizer.eos_token_id]
    return prompt, target


def fit_length(prompt: list[int], target: list[int], max_length: int) -> tuple[list[int], list[int]]:
    """Drop the prompt's start (as the game truncates prompts) and, only if still too long, the target's end."""
    prompt = prompt[max(0, len(prompt) + len(target) - max_length) :]
    return prompt, target[: max_length - len(prompt)]


class GamePromptSFTDataset(Dataset):
    """`prompt`/`response` rows as unpadded token sequences with a loss mask on the response (verl `no_padding`)."""

    def __init__(
        self,
        parquet_files: str | Sequence[str],
        tokenizer: Any,
        config: Any,
        processor: Any = None,
        max_samples: int = -1,
    ) -> None:
        files = [parquet_files] if isinstance(parquet_files, str) else list(parquet_files)
        rows = [row for path in files for row in read_sft_parquet(path)]
        if max_samples > 0:
            rows = rows[:max_samples]
        max_length = int(config.get("max_length", 4096))
        self.examples: list[tuple[list[int], list[int]]] = []
        truncated = 0
        for row in rows:
            prompt, target = tokenize_example(tokenizer, row["prompt"], row["response"])
            if len(prompt) + len(target) > max_length:
                truncated += 1
                prompt, target = fit_length(prompt, target, max_length)
            self.examples.append((prompt, target))
        if truncated:
            logger.warning("%d of %d examples exceed data.max_length=%d and were truncated", truncated, len(rows), max_length)
        print(f"medplay sft dataset: {len(self.examples)} examples from {', '.join(map(str, files))}")

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        prompt, target = self.examples[index]
        input_ids = torch.tensor(prompt + target, dtype=torch.long)
        loss_mask = torch.cat([torch.zeros(len(prompt), dtype=torch.long), torch.ones(len(target), dtype=torch.long)])
        return {"input_ids": input_ids, "position_ids": torch.arange(len(input_ids)), "loss_mask": loss_mask}
