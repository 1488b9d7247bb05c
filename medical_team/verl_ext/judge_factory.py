"""The judge the agent loop calls: built once per process from `medplay.judge`."""

from __future__ import annotations

from functools import lru_cache

from medical_team.game.judging import Judge
from medical_team.judge.backends import BackendSettings, build_judge
from medical_team.judge.client import HttpJudge
from medical_team.judge.gold import build_gold, medec_seeds
from medical_team.judge.gold_probe import GoldProbes
from medical_team.judge.retry import RetryPolicy
from medical_team.judge.rules import RuleSettings
from medical_team.verl_ext.settings import JudgeSettings


@lru_cache(maxsize=4)
def selfplay_judge(settings: JudgeSettings) -> Judge:
    """The judge `settings` name: in-process `rules`/`hf`/`openai`, or the judge server over `http`."""
    retry = RetryPolicy(attempts=settings.attempts)
    if settings.backend == "http":
        return HttpJudge(
            settings.url or "",
            timeout_s=settings.timeout_s,
            batch_size=settings.batch_size,
            retry=retry,
            max_consecutive_failures=settings.max_consecutive_failures,
        )
    return build_judge(
        BackendSettings(
            backend=settings.backend,
            model=settings.model,
            base_url=settings.base_url,
            timeout_s=settings.timeout_s,
            batch_size=settings.batch_size,
            retry=retry,
            rules=RuleSettings(settings.min_length_ratio, settings.max_length_ratio),
        )
    )


@lru_cache(maxsize=4)
def selfplay_gold_probes(settings: JudgeSettings) -> GoldProbes | None:
    """Gold probes for this judge (built once per process from the bundled MEDEC train seeds); None when off."""
    if not settings.probed:
        return None
    return GoldProbes(build_gold(medec_seeds("train")), settings.gold_probe_fraction)
