"""Batched assessor generation for evaluation: vLLM when it is installed and a GPU is present, else transformers.

Decoding is greedy, so a model's benchmark score is reproducible.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medical_team.game.batch import Generator
from medical_team.game.prompts import Message, render_prompt

BACKENDS = ("auto", "vllm", "transformers")
CPU_KV_CACHE_BYTES = 2 << 30  # vLLM's KV cache on CPU: ~90 K tokens of a 135M model, ~7 K of a 4B one


@dataclass(frozen=True)
class GenerationSettings:
    """How evaluation generates."""

    max_new_tokens: int = 1024
    batch_size: int = 16
    native_thinking: bool = False  # use the chat template's thinking mode (Qwen3) instead of the prefix
    enforce_eager: bool = False  # vLLM without torch.compile and CUDA graphs (always on CPU)


def gpu_available() -> bool:
    """True when torch sees a CUDA device."""
    import torch

    return torch.cuda.is_available()


def choose_backend(requested: str) -> str:
    """The backend to use: `auto` means vLLM if importable and a GPU is present, otherwise transformers."""
    if requested != "auto":
        return requested
    return "vllm" if importlib.util.find_spec("vllm") is not None and gpu_available() else "transformers"


class VLLMGenerator:
    """Greedy generation with vLLM's offline engine; prompts rendered like the game renders them.

    vLLM gets every prompt in one call and batches them itself (continuous batching, up to its own
    `max_num_seqs`); `GenerationSettings.batch_size` only sizes transformers' batches. On CPU the
    engine runs eagerly (torch.compile adds ~90 s to its start there and decodes no faster) and its
    KV cache is a fixed `CPU_KV_CACHE_BYTES`: vLLM's default would reserve 92 % of host RAM and refuses
    to start when other processes hold more than the rest. On a GPU `settings.enforce_eager` skips the
    compilation and CUDA-graph capture, which cost more start-up than they save on a small model.
    """

    def __init__(self, model: Path | str, settings: GenerationSettings) -> None:
        from vllm import LLM, SamplingParams

        self.settings = settings
        if gpu_available():
            engine: dict[str, Any] = {"enforce_eager": settings.enforce_eager}
        else:
            engine = {"enforce_eager": True, "kv_cache_memory_bytes": CPU_KV_CACHE_BYTES}
        self.llm = LLM(model=str(model), seed=0, **engine)
        self.tokenizer = self.llm.get_tokenizer()
        self.params = SamplingParams(temperature=0.0, max_tokens=settings.max_new_tokens)

    def render(self, messages: list[Message]) -> str:
        """Chat template plus the thinking prefix, exactly as the game renders prompts."""
        return render_prompt(self.tokenizer, messages, self.settings.native_thinking)

    def generate(self, prompts: Sequence[list[Message]], progress: bool = False) -> list[str]:
        """One response per prompt, in order; `progress` shows a bar counting finished notes."""
        texts = [self.render(m) for m in prompts]
        outputs = self.llm.generate(texts, self.params, use_tqdm=_note_bar if progress else False)
        return [output.outputs[0].text for output in outputs]


def _note_bar(*iterable: Any, **kwargs: Any) -> Any:
    """vLLM's progress bar as `assessing ... note` (its instant prompt-rendering pass gets none)."""
    from tqdm import tqdm

    if iterable:
        return tqdm(*iterable, disable=True)
    return tqdm(total=kwargs.get("total"), unit="note", desc="assessing", dynamic_ncols=True)


def make_generator(model: Path | str, backend: str, settings: GenerationSettings) -> Generator:
    """A generator for the chosen backend (`vllm` or `transformers`)."""
    if backend == "vllm":
        return VLLMGenerator(model, settings)
    import torch

    from medical_team.game.hf_generator import HFGenerator, SamplingSettings

    sampling = SamplingSettings(
        max_new_tokens=settings.max_new_tokens, do_sample=False, seed=None, batch_size=settings.batch_size
    )
    device = "cuda" if gpu_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    return HFGenerator.from_pretrained(str(model), sampling, settings.native_thinking, device=device, dtype=dtype)


def generate_all(generator: Generator, prompts: Sequence[list[Message]], batch_size: int) -> list[str]:
    """Responses for every prompt with a progress bar: `batch_size` at a time, or all at once to vLLM."""
    from tqdm import tqdm

    if isinstance(generator, VLLMGenerator):  # its scheduler keeps its batch full as responses finish
        return generator.generate(prompts, progress=True)
    responses: list[str] = []
    with tqdm(total=len(prompts), unit="note", desc="assessing", dynamic_ncols=True) as bar:
        for start in range(0, len(prompts), batch_size):
            chunk = prompts[start : start + batch_size]
            responses.extend(generator.generate(chunk))
            bar.update(len(chunk))
    return responses
