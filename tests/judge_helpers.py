"""Helpers of the judge tests (importable as `judge_helpers`: pytest puts this folder on sys.path)."""

from __future__ import annotations

import time

import httpx
from fastapi import FastAPI

from medical_team.common.vocab import Label
from medical_team.data.records import GameSeed
from medical_team.game.judging import JudgeRequest
from medical_team.game.rewards import RewardConfig
from medical_team.judge.backends import Runtime, build_judge
from medical_team.judge.model_judge import ModelJudge
from medical_team.judge.retry import RetryPolicy
from medical_team.judge.rules import RulesJudge
from medical_team.judge.schemas import GameIn, JudgeBatchIn
from medical_team.judge.scorer import JudgeScorer
from medical_team.judge.settings import packaged_judge_settings
from medical_team.judge_server.app import ServerSettings, create_app


def reworded(seed: GameSeed, extra: str = "") -> str:
    """A rewrite of the seed of about the same length: the same sentences, lightly reworded."""
    return seed.text.replace("The patient", "This patient").replace(" is ", " was ") + extra


def make_request(seed: GameSeed, rewrite: str, intended: Label | None = None) -> JudgeRequest:
    """A judge request whose intended label defaults to the inject mode's (always `error`)."""
    return JudgeRequest(seed=seed, intended_label=intended or Label.ERROR, rewrite=rewrite)


FAST_RETRY = RetryPolicy(attempts=3, initial_backoff_s=0.01, max_backoff_s=0.02)
FAST = Runtime(retry=FAST_RETRY)


def openai_judge(url: str, **options: object) -> ModelJudge:
    """The openai backend as `build_judge` makes it, with quick retries."""
    settings = packaged_judge_settings(backend="openai", url=f"{url}/v1", model="judge-model", **options)
    judge = build_judge(settings, FAST)
    assert isinstance(judge, ModelJudge)
    return judge


def rules_app(max_body_bytes: int = 64 * 1024, max_batch: int = 8, **reward_options: object) -> FastAPI:
    """The judge server app with the `rules` backend and small limits."""
    settings = ServerSettings(max_body_bytes=max_body_bytes, max_batch=max_batch)
    return create_app(settings, JudgeScorer(RulesJudge, rewards=RewardConfig(**reward_options)))


def wire(requests: list[JudgeRequest]) -> dict:
    """The JSON body of POST /v1/judge for these requests."""
    return JudgeBatchIn(games=[GameIn.from_request(r) for r in requests]).model_dump(mode="json")


READY_TIMEOUT_S = 60.0  # loading the tiny model takes about a second; generous for a loaded machine


def wait_until_ready(url: str, timeout_s: float = READY_TIMEOUT_S, status: int = 200) -> None:
    """Poll the server's /ready every 0.1 s until it answers `status`; fail with its last answer after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while (response := HTTP.get(f"{url}/ready")).status_code != status:
        assert time.monotonic() < deadline, f"/ready after {timeout_s} s: {response.status_code} {response.text}"
        time.sleep(0.1)


# One pooled client for the tests' own requests: creating an httpx client per request costs tens of ms.
HTTP = httpx.Client(timeout=60)
