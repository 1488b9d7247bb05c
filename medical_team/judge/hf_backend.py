"""A `ChatCompleter` backed by a local Hugging Face causal LM (batched greedy `generate`)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from medical_team.judge.model_judge import Completion, CompletionFailure
from medical_team.judge.prompt import Message


class HFChatCompleter:
    """Loads `model` (a local path or a hub id already in the cache) and answers conversations greedily."""

    def __init__(
        self,
        model: str,
        *,
        device: str = "cpu",
        dtype: str = "auto",
        max_new_tokens: int = 128,
        local_files_only: bool = True,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.name = model
        self.max_new_tokens = max_new_tokens
        self.device = device
        self.tokenizer = AutoTokenizer.from_pretrained(model, local_files_only=local_files_only)
        self.tokenizer.padding_side = (
            "left"  # decoder-only batching: pad on the left so generation continues the prompt
        )
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        torch_dtype: Any = dtype if dtype == "auto" else getattr(torch, dtype)
        self.model = AutoModelForCausalLM.from_pretrained(model, dtype=torch_dtype, local_files_only=local_files_only)
        self.model.to(device).eval()
        self._torch = torch
        self._lock = threading.Lock()  # one generate at a time: the model is not re-entrant

    def render(self, messages: list[Message]) -> str:
        """The conversation rendered by the model's chat template, ending where the model's reply starts."""
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def complete(self, conversations: Sequence[list[Message]]) -> list[Completion]:
        """Greedy completions of the whole batch in one `generate` call, in order."""
        if not conversations:
            return []
        prompts = [self.render(messages) for messages in conversations]
        try:
            inputs = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
            inputs = inputs.to(self.device)
            with self._lock, self._torch.inference_mode():
                output = self.model.generate(
                    **inputs,
                    max_new_tokens=self.max_new_tokens,
                    do_sample=False,
                    pad_token_id=self.tokenizer.pad_token_id,
                )
        except RuntimeError as error:  # out of memory and other device failures: ties, counted as a failed batch
            reason = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
            return [CompletionFailure(f"{self.name}: {reason}")] * len(conversations)
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
        return list(self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True))
