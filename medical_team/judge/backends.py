"""Build the judge that `JudgeSettings` name: `rules`, `hf` (local model), `openai`/`vllm` (OpenAI-compatible), `http`."""

from __future__ import annotations

from dataclasses import dataclass

from medical_team.game.judging import Judge
from medical_team.judge.model_judge import ModelJudge
from medical_team.judge.retry import RetryPolicy
from medical_team.judge.rules import RulesJudge
from medical_team.judge.settings import JUDGE_BACKENDS, JudgeSettings


@dataclass(frozen=True)
class Runtime:
    """How the process that builds the judge reaches it: options of a command, not of the training config."""

    api_key: str | None = None  # openai: the endpoint's key (from an environment variable, never a file)
    device: str = "cpu"  # hf: torch device
    dtype: str = "auto"  # hf: torch dtype
    local_files_only: bool = True  # hf: never download at run time unless asked
    retry: RetryPolicy | None = None  # None: the settings' `attempts` with the default backoff


def build_judge(settings: JudgeSettings, runtime: Runtime = Runtime()) -> Judge:
    """The judge `settings` describe (checked by their schema); ValueError for a `vllm` judge not yet served."""
    retry = runtime.retry or settings.retry
    if settings.backend == "rules":
        return RulesJudge(settings.rules)
    if settings.backend == "http":
        from medical_team.judge.client import HttpJudge

        return HttpJudge(
            settings.url,
            timeout_s=settings.timeout_s,
            batch_size=settings.batch_size,
            retry=retry,
            max_consecutive_failures=settings.max_consecutive_failures,
        )
    if settings.backend == "hf":
        from medical_team.judge.hf_backend import HFChatCompleter

        completer = HFChatCompleter(
            settings.model,
            device=runtime.device,
            dtype=runtime.dtype,
            max_new_tokens=settings.serve.max_tokens,
            local_files_only=runtime.local_files_only,
        )
        return ModelJudge(completer, rules=settings.rules, batch_size=settings.batch_size)
    if settings.backend in ("openai", "vllm"):
        from medical_team.judge.openai_backend import OpenAIChatCompleter

        if not settings.base_url:  # vllm: `medplay train` fills it in once the judge's server is up
            raise ValueError(f"backend {settings.backend!r} needs base_url (e.g. http://127.0.0.1:8001/v1)")
        completer = OpenAIChatCompleter(
            settings.base_url,
            settings.model,
            api_key=runtime.api_key,
            timeout_s=settings.timeout_s,
            max_tokens=settings.serve.max_tokens,
            concurrency=settings.batch_size,
            retry=retry,
        )
        return ModelJudge(
            completer,
            rules=settings.rules,
            batch_size=settings.batch_size,
            max_consecutive_failures=settings.max_consecutive_failures,
        )
    raise ValueError(f"unknown judge backend {settings.backend!r}; choose one of {', '.join(JUDGE_BACKENDS)}")
