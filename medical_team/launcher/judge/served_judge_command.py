"""The served judge's vLLM OpenAI server: its command line, and the log lines after which it never answers.

`vllm_command` builds `python -m vllm.entrypoints.openai.api_server` from `medplay.judge.serve`;
`FATAL_LINES` is what the launcher looks for in its log (served_judge_process.py), each with the
setting to change (docs/reliability.md, "The served judge fails").
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from medical_team.judge.settings import ServeSettings

# The setting to change when the server cannot load or start its model.
MODEL_KNOB = (
    "its log says why; check medplay.judge.model (a model this vLLM serves) and medplay.judge.serve.extra_args, "
    "or use a judge served elsewhere (medplay.judge.backend=openai with medplay.judge.url)"
)
_SMALLER = (
    "turn down medplay.judge.serve.gpu_memory_utilization (or kv_cache_memory_bytes), max_model_len, max_num_seqs"
)


@dataclass(frozen=True)
class FatalLine:
    """Text of a vLLM log line after which the server never answers, and the setting to change."""

    text: str
    knob: str
    memory: bool = False  # its memory was sized wrong: exit status OUT_OF_MEMORY_EXIT


FATAL_LINES = (
    FatalLine("EngineCore failed to start", MODEL_KNOB),
    FatalLine("Engine core initialization failed", MODEL_KNOB),
    FatalLine(
        "No available memory for the cache blocks",
        "its weights and activations left no room for a KV cache: raise medplay.judge.serve.gpu_memory_utilization "
        "or give the cache in bytes (medplay.judge.serve.kv_cache_memory_bytes)",
        memory=True,
    ),
    FatalLine(
        "Error in memory profiling",
        "another process changed the card's memory while vLLM measured it: give the judge's KV cache in bytes "
        "(medplay.judge.serve.kv_cache_memory_bytes), which needs no profiling",
        memory=True,
    ),
    FatalLine("CUDA out of memory", _SMALLER, memory=True),
    FatalLine("torch.OutOfMemoryError", _SMALLER, memory=True),
)


def fatal_line(lines: list[str]) -> tuple[FatalLine, str] | None:
    """The first fatal line among `lines`, with its kind."""
    for line in lines:
        fatal = next((item for item in FATAL_LINES if item.text in line), None)
        if fatal is not None:
            return fatal, line
    return None


def vllm_command(model: Path, port: int, serve: ServeSettings, *, on_cpu: bool) -> list[str]:
    """The vLLM OpenAI server's command line: the KV cache in bytes, and on a GPU the share vLLM checks is free."""
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model), "--served-model-name", str(model),
        "--host", "127.0.0.1", "--port", str(port),
        "--dtype", "float32" if on_cpu and serve.dtype == "auto" else serve.dtype,
        "--max-num-seqs", str(serve.max_num_seqs),
        "--disable-log-stats",
        # The judge reads text only: no vision tower, no image processor, no warm-up of it (docs/judge.md).
        "--language-model-only",
    ]  # fmt: skip
    if serve.max_model_len is not None:
        command += ["--max-model-len", str(serve.max_model_len)]
    if serve.kv_cache_memory_bytes is not None:  # on a GPU the launcher sets it from the memory plan
        command += ["--kv-cache-memory-bytes", str(serve.kv_cache_memory_bytes)]
    if not on_cpu:  # with the bytes above, only vLLM's start-up check that this share of the card is free
        command += ["--gpu-memory-utilization", str(serve.gpu_memory_utilization)]
    if serve.enforce_eager or on_cpu:
        command.append("--enforce-eager")
    return [*command, *serve.extra_args]
