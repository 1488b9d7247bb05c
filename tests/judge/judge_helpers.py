"""Helpers of the judge tests (importable as `judge_helpers`: pytest puts this folder on sys.path)."""

from __future__ import annotations

from medical_team.data.records import GameSeed
from medical_team.game.judging import JudgeRequest
from medical_team.vocab import Label


def reworded(seed: GameSeed, extra: str = "") -> str:
    """A rewrite of the seed of about the same length: the same sentences, lightly reworded."""
    return seed.text.replace("The patient", "This patient").replace(" is ", " was ") + extra


def make_request(seed: GameSeed, rewrite: str, intended: Label | None = None) -> JudgeRequest:
    """A judge request whose intended label defaults to the inject mode's (always `error`)."""
    return JudgeRequest(seed=seed, intended_label=intended or Label.ERROR, rewrite=rewrite)
