"""Helpers of the judge tests (importable as `judge_helpers`: pytest puts this folder on sys.path)."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from medical_team.data.records import GameSeed
from medical_team.game.judging import JudgeRequest
from medical_team.game.rewards import RewardConfig
from medical_team.judge.app import ServerSettings, create_app
from medical_team.judge.rules import RulesJudge
from medical_team.judge.schemas import GameIn, JudgeBatchIn
from medical_team.judge.scorer import JudgeScorer
from medical_team.vocab import Label


def reworded(seed: GameSeed, extra: str = "") -> str:
    """A rewrite of the seed of about the same length: the same sentences, lightly reworded."""
    return seed.text.replace("The patient", "This patient").replace(" is ", " was ") + extra


def make_request(seed: GameSeed, rewrite: str, intended: Label | None = None) -> JudgeRequest:
    """A judge request whose intended label defaults to the inject mode's (always `error`)."""
    return JudgeRequest(seed=seed, intended_label=intended or Label.ERROR, rewrite=rewrite)


def rules_app(max_body_bytes: int = 64 * 1024, max_batch: int = 8, **reward_options: object) -> FastAPI:
    """The judge server app with the `rules` backend and small limits."""
    settings = ServerSettings(max_body_bytes=max_body_bytes, max_batch=max_batch)
    return create_app(settings, JudgeScorer(RulesJudge, rewards=RewardConfig(**reward_options)))


def wire(requests: list[JudgeRequest]) -> dict:
    """The JSON body of POST /v1/judge for these requests."""
    return JudgeBatchIn(games=[GameIn.from_request(r) for r in requests]).model_dump(mode="json")


# One pooled client for the tests' own requests: creating an httpx client per request costs tens of ms.
HTTP = httpx.Client(timeout=60)
