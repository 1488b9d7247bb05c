"""The judge the agent loop calls: built once per process from `medplay.judge`."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

from medical_team.game.judging import Judge
from medical_team.judge.backends import build_judge
from medical_team.judge.gold import build_gold, medec_seeds
from medical_team.judge.gold_probe import GoldProbes
from medical_team.judge.settings import JudgeSettings


@lru_cache(maxsize=4)
def selfplay_judge(settings: JudgeSettings) -> Judge:
    """The judge `settings` name: in-process `rules`/`hf`/`openai`, the served `vllm` judge, or `http`."""
    if settings.backend == "vllm" and not settings.base_url:
        raise RuntimeError("medplay.judge.base_url is unset: the vllm judge is reached through `medplay train`")
    return build_judge(settings)


@lru_cache(maxsize=4)
def judge_executor(settings: JudgeSettings) -> ThreadPoolExecutor:
    """Threads for the agent loops' blocking judge calls: one per game in flight, up to `serve.concurrency`.

    asyncio's default executor has min(32, cores + 4) threads, shared with tokenization: on a small host
    it would let only a handful of games wait on the judge at once.
    """
    return ThreadPoolExecutor(max_workers=settings.serve.concurrency, thread_name_prefix="medplay-judge")


@lru_cache(maxsize=4)
def selfplay_gold_probes(settings: JudgeSettings) -> GoldProbes | None:
    """Gold probes for this judge (built once per process from the bundled MEDEC train seeds); None when off."""
    if not settings.probed:
        return None
    return GoldProbes(build_gold(medec_seeds("train")), settings.gold_probe_fraction)
