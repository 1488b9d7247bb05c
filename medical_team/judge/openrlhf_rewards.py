"""Assessor rewards for OpenRLHF's remote reward-model requests: split query into prompt and response, score it."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from medical_team.common.vocab import Category, Label
from medical_team.data.records import GameSeed
from medical_team.game.prompts import THINKING_PREFIX
from medical_team.game.rewards import RewardConfig
from medical_team.game.settle import AssessorScore, score_assessor


class RewardInputError(ValueError):
    """One item of a reward request cannot be scored; the message names the item and the fix."""


@dataclass(frozen=True)
class RewardLabel:
    """The truth an assessor response is scored against."""

    label: Label
    error_sentence: str | None = None  # enables the localisation bonus when given


# End-of-turn and padding tokens that a client decoding with special tokens leaves after the answer.
_TRAILING_SPECIAL = re.compile(r"(?:\s*(?:<\|[^<>|\s]{1,40}\|>|</s>|<eos>|<pad>|<end_of_turn>))+\s*$")


def response_of(query: str, prompt: str | None, index: int) -> str:
    """The model's response inside `query` (prompt + response): the text after the prompt, special tokens trimmed."""
    if prompt:
        start = query.find(prompt)
        if start == -1:
            raise RewardInputError(f"query[{index}] does not contain prompts[{index}]; send query = prompt + response")
        response = query[start + len(prompt) :]
    else:
        start = query.rfind(THINKING_PREFIX)
        if start == -1:
            raise RewardInputError(
                f"query[{index}] has no prompt: send 'prompts', or a query whose prompt ends with the thinking prefix"
            )
        response = query[start + len(THINKING_PREFIX) :]
    return _TRAILING_SPECIAL.sub("", response)


def parse_reward_label(text: str, index: int) -> RewardLabel:
    """`error`, `no_error` (any case), or a JSON object `{"label": ..., "error_sentence": ...}`."""
    stripped = text.strip()
    try:
        if stripped.startswith("{"):
            obj = json.loads(stripped)
            sentence = obj.get("error_sentence")
            if sentence is not None and not isinstance(sentence, str):
                raise ValueError("error_sentence is not a string")
            return RewardLabel(Label(str(obj["label"]).strip().lower()), sentence)
        return RewardLabel(Label(stripped.lower()))
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        raise RewardInputError(
            f"labels[{index}] must be 'error', 'no_error' or a JSON object with a 'label' key, got {stripped[:80]!r}"
        ) from None


def assessor_score(response: str, truth: RewardLabel, config: RewardConfig) -> AssessorScore:
    """Score one assessor response with `score_assessor` on a note whose label is `truth`."""
    seed = GameSeed(
        note_id="openrlhf",
        pair_id="openrlhf",
        category=Category.of(truth.label, adversarial=False),
        label=truth.label,
        text="",
        error_type=None,
        error_sentence_id=-1,
        error_sentence=truth.error_sentence,
        corrected_sentence=None,
        source_file="",
    )
    return score_assessor(seed, response, config)


def score_queries(
    queries: Sequence[str], prompts: Sequence[str] | None, labels: Sequence[str], config: RewardConfig
) -> list[AssessorScore]:
    """Assessor scores of OpenRLHF-style queries; raises `RewardInputError` naming the first bad item."""
    if len(labels) != len(queries) or (prompts is not None and len(prompts) != len(queries)):
        counts = f"{len(queries)} queries, {len(labels)} labels" + (
            "" if prompts is None else f", {len(prompts)} prompts"
        )
        raise RewardInputError(f"queries, prompts and labels must have the same length, got {counts}")
    items = zip(queries, prompts if prompts is not None else [None] * len(queries), labels)
    return [
        assessor_score(response_of(query, prompt, i), parse_reward_label(label, i), config)
        for i, (query, prompt, label) in enumerate(items)
    ]


def reward_payload(scores: Sequence[AssessorScore]) -> dict[str, Any]:
    """OpenRLHF's reward answer: `rewards`, `scores` (the same values) and per-sample `extra_logs`."""
    rewards = [score.reward for score in scores]
    return {
        "rewards": rewards,
        "scores": list(rewards),
        "extra_logs": {
            "assessor_format_ok": [float(score.format_ok) for score in scores],
            "assessor_correct": [float(score.correct) for score in scores],
        },
    }
