"""Build the judge that `JudgeSettings` name: `rules`, `hf` (local model), `openai`/`vllm` (OpenAI-compatible), `http`.

Which function builds which backend is the backend's entry in medical_team/judge/judge_kinds.py (`builder`), resolved here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from medical_team.game.judging import Judge
from medical_team.judge.judge_kinds import BackendKind
from medical_team.judge.model_judge import ModelJudge
from medical_team.judge.retry import RetryPolicy
from medical_team.judge.rules import RulesJudge
from medical_team.judge.settings import JudgeSettings


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
    return builder_of(settings.kind)(settings, runtime)


def builder_of(kind: BackendKind) -> Callable[[JudgeSettings, Runtime], Judge]:
    """The function `kind.builder` names (`module:function` in medical_team.judge), imported now."""
    module, _, function = kind.builder.partition(":")
    return getattr(importlib.import_module(module), function)


def rules_judge(settings: JudgeSettings, runtime: Runtime) -> Judge:
    """The rule checks alone (`rules`): no model reads the rewrite."""
    return RulesJudge(settings.rules)


def http_judge(settings: JudgeSettings, runtime: Runtime) -> Judge:
    """A client of medplay's judge server at `settings.url` (`http`)."""
    from medical_team.judge.access import judge_token
    from medical_team.judge.client import HttpJudge

    return HttpJudge(
        settings.url,
        timeout_s=settings.timeout_s,
        batch_size=settings.batch_size,
        retry=runtime.retry or settings.retry,
        max_consecutive_failures=settings.max_consecutive_failures,
        token=judge_token(),
    )


def local_model_judge(settings: JudgeSettings, runtime: Runtime) -> Judge:
    """A model judge over a local model loaded into this process (`hf`)."""
    from medical_team.judge.hf_backend import HFChatCompleter

    completer = HFChatCompleter(
        settings.model,
        device=runtime.device,
        dtype=runtime.dtype,
        max_new_tokens=settings.serve.max_tokens,
        local_files_only=runtime.local_files_only,
    )
    return ModelJudge(completer, rules=settings.rules, batch_size=settings.batch_size)


def endpoint_judge(settings: JudgeSettings, runtime: Runtime) -> Judge:
    """A model judge over an OpenAI-compatible endpoint (`openai`, the served `vllm`)."""
    from medical_team.judge.openai_backend import OpenAIChatCompleter

    if not settings.url:  # vllm: `medplay train` fills it in once the judge's server is up
        raise ValueError(f"backend {settings.backend!r} needs url (e.g. http://127.0.0.1:8001/v1)")
    completer = OpenAIChatCompleter(
        settings.url,
        settings.model,
        api_key=runtime.api_key,
        timeout_s=settings.timeout_s,
        max_tokens=settings.serve.max_tokens,
        concurrency=settings.batch_size,
        retry=runtime.retry or settings.retry,
    )
    return ModelJudge(
        completer,
        rules=settings.rules,
        batch_size=settings.batch_size,
        max_consecutive_failures=settings.max_consecutive_failures,
    )
