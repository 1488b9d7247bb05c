"""Build a judge backend by name: `rules`, `hf` (local Hugging Face model) or `openai` (compatible endpoint)."""

from __future__ import annotations

from dataclasses import dataclass, field

from medical_team.judge.model_judge import ModelJudge
from medical_team.judge.retry import RetryPolicy
from medical_team.judge.rules import RuleSettings, RulesJudge

BACKENDS = ("rules", "hf", "openai")


@dataclass(frozen=True)
class BackendSettings:
    """Everything needed to build one judge backend."""

    backend: str = "rules"
    model: str | None = None  # hf: path or id (default google/medgemma-4b-it); openai: served model name
    base_url: str | None = None  # openai: e.g. http://127.0.0.1:8001/v1
    api_key: str | None = None
    device: str = "cpu"
    dtype: str = "auto"
    local_files_only: bool = True  # hf: never download at run time unless asked
    max_new_tokens: int = 128
    batch_size: int = 16
    timeout_s: float = 120.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_consecutive_failures: int | None = 5
    rules: RuleSettings = field(default_factory=RuleSettings)


def build_judge(settings: BackendSettings) -> RulesJudge | ModelJudge:
    """The judge `settings` describe; raises ValueError naming the option for an incomplete description."""
    if settings.backend == "rules":
        return RulesJudge(settings.rules)
    if settings.backend == "hf":
        from medical_team.judge.hf_backend import DEFAULT_JUDGE_MODEL, HFChatCompleter

        completer = HFChatCompleter(
            settings.model or DEFAULT_JUDGE_MODEL,
            device=settings.device,
            dtype=settings.dtype,
            max_new_tokens=settings.max_new_tokens,
            local_files_only=settings.local_files_only,
        )
        return ModelJudge(completer, rules=settings.rules, batch_size=settings.batch_size)
    if settings.backend == "openai":
        from medical_team.judge.openai_backend import OpenAIChatCompleter

        if not settings.base_url or not settings.model:
            raise ValueError("backend 'openai' needs base_url (e.g. http://127.0.0.1:8001/v1) and model")
        completer = OpenAIChatCompleter(
            settings.base_url,
            settings.model,
            api_key=settings.api_key,
            timeout_s=settings.timeout_s,
            max_tokens=settings.max_new_tokens,
            concurrency=settings.batch_size,
            retry=settings.retry,
        )
        return ModelJudge(
            completer,
            rules=settings.rules,
            batch_size=settings.batch_size,
            max_consecutive_failures=settings.max_consecutive_failures,
        )
    raise ValueError(f"unknown judge backend {settings.backend!r}; choose one of {', '.join(BACKENDS)}")
