"""The judge the agent loop calls: built once per process from `medplay.judge`."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

from medical_team.agent_loop.judge_waits import JudgeWaits
from medical_team.game.judging import Judge, JudgeRequest, JudgeVerdict
from medical_team.judge.backends import build_judge
from medical_team.judge.gold import build_gold, medec_seeds
from medical_team.judge.gold_probe import GoldProbes
from medical_team.judge.settings import JudgeSettings
from medical_team.run.judge_server_ready import wait_until_served


class WatchedJudge:
    """A model judge whose calls are counted while they wait (`JudgeWaits`: said on the console after 30 s).

    For the `vllm` judge, the first call also waits until the server `medplay train` started beside the
    trainer answers (served_judge.serve_judge), on the judge-executor thread of the first judged game,
    never on the agent loop's event loop.
    """

    def __init__(self, judge: Judge, settings: JudgeSettings) -> None:
        self._judge = judge
        self._settings = settings
        self._waits = JudgeWaits(str(settings.url or settings.model))
        self._ready = threading.Event()
        if not settings.kind.served_here:
            self._ready.set()
        self._lock = threading.Lock()

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """The wrapped judge's verdicts, once the server answers."""
        with self._waits.waiting():
            if not self._ready.is_set():
                with self._lock:
                    if not self._ready.is_set():
                        wait_until_served(str(self._settings.url), self._settings.serve.startup_timeout_s)
                        self._ready.set()
            return self._judge.judge(requests)

    def __getattr__(self, name: str):
        """Everything else (its stats, its name) is the wrapped judge's."""
        return getattr(self._judge, name)


@lru_cache(maxsize=4)
def selfplay_judge(settings: JudgeSettings) -> Judge:
    """The judge `settings` name: in-process `rules`/`hf`/`openai`, the served `vllm` judge, or `http`."""
    if settings.kind.served_here and not settings.url:
        raise RuntimeError("medplay.judge.url is unset: the vllm judge is reached through `medplay train`")
    judge = build_judge(settings)
    return WatchedJudge(judge, settings) if settings.kind.judged_by_model else judge


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
