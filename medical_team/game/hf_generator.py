"""A `Generator` backed by a Hugging Face causal LM: batched, left-padded `generate` on chat prompts.

generator = HFGenerator.from_pretrained("/models/my-policy", SamplingSettings(max_new_tokens=256))
texts = generator.generate([assessor_messages(note)])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from medical_team.game.prompts import Message, render_prompt


@dataclass(frozen=True)
class SamplingSettings:
    """How responses are sampled."""

    max_new_tokens: int = 512
    do_sample: bool = True
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int | None = 0  # None: do not reseed; otherwise call k of `generate` uses seed + k
    batch_size: int = 8  # prompts per `model.generate` call

    def __post_init__(self) -> None:
        """Reject settings `generate` would choke on, naming the field."""
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.do_sample and not (math.isfinite(self.temperature) and self.temperature > 0):
            raise ValueError(f"temperature must be > 0 when sampling, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")


class HFGenerator:
    """Generates responses with a transformers model; the chat template and thinking prefix are applied here."""

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        sampling: SamplingSettings | None = None,
        native_thinking: bool = False,
    ) -> None:
        if tokenizer.chat_template is None:
            raise ValueError(f"tokenizer {tokenizer.name_or_path!r} has no chat template; the game needs one")
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.tokenizer.padding_side = "left"  # decoder-only models continue from the last prompt token
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.sampling = sampling or SamplingSettings()
        self.native_thinking = native_thinking
        self._calls = 0

    @classmethod
    def from_pretrained(
        cls,
        path: str,
        sampling: SamplingSettings | None = None,
        native_thinking: bool = False,
        device: str = "cpu",
        dtype: torch.dtype = torch.float32,
    ) -> HFGenerator:
        """Load model and tokenizer from a local directory or an already cached hub id (no download)."""
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, local_files_only=True).to(device)
        return cls(model, tokenizer, sampling, native_thinking)

    def render(self, messages: list[Message]) -> str:
        """The exact prompt text the model continues (see `medical_team.game.prompts.render_prompt`)."""
        return render_prompt(self.tokenizer, messages, self.native_thinking)

    def generate(self, prompts: Sequence[list[Message]]) -> list[str]:
        """One response per chat prompt, in order, generated `batch_size` prompts at a time."""
        if self.sampling.seed is not None:
            torch.manual_seed(self.sampling.seed + self._calls)
        self._calls += 1
        texts = [self.render(messages) for messages in prompts]
        size = self.sampling.batch_size
        return [
            text for start in range(0, len(texts), size) for text in self._generate_batch(texts[start : start + size])
        ]

    def _generation_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of `model.generate` for the sampling settings."""
        kwargs: dict[str, Any] = {
            "max_new_tokens": self.sampling.max_new_tokens,
            "do_sample": self.sampling.do_sample,
            "pad_token_id": self.tokenizer.pad_token_id,
            "eos_token_id": self.tokenizer.eos_token_id,
        }
        if self.sampling.do_sample:
            kwargs.update(temperature=self.sampling.temperature, top_p=self.sampling.top_p, top_k=0)
        return kwargs

    @torch.inference_mode()
    def _generate_batch(self, texts: list[str]) -> list[str]:
        """Generate for one left-padded batch and decode only the new tokens."""
        # the chat template already wrote every special token the prompt needs
        batch = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.model.device)
        output = self.model.generate(**batch, **self._generation_kwargs())
        new_tokens = output[:, batch["input_ids"].shape[1] :]
        return self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
