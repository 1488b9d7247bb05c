"""Assessor rewards for OpenRLHF's remote reward-model requests: split query into prompt and response, score it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from medical_team.game.answers import parse_assessor_answer, sentence_matches
from medical_team.game.cot import parse_response
from medical_team.game.prompts import THINKING_PREFIX
from medical_team.game.rewards import RewardConfig, ScoreInputs, score_game
from medical_team.vocab import Label


class RewardInputError(ValueError):
    """One item of a reward request cannot be scored; the message names the item and the fix."""


@dataclass(frozen=True)
class RewardLabel:
    """The truth an assessor response is scored against."""

    label: Label
    error_sentence: str | None = None  # enables the localisation bonus when given


@dataclass(frozen=True)
class AssessorScore:
    """The assessor reward of one response, with the parts OpenRLHF logs."""

    reward: float
    format_ok: bool
    correct: bool


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
    """Score one assessor response as in a vanilla game whose label is `truth` (format, correctness, localisation)."""
    parsed = parse_response(response)
    answer = parse_assessor_answer(parsed.answer)
    format_ok = parsed.compliant and answer.readable
    matched = answer.verdict is Label.ERROR and sentence_matches(answer.sentence, truth.error_sentence)
    rewards = score_game(
        ScoreInputs(
            adversarial=False,
            truth=truth.label,
            intended=truth.label,
            verdict=answer.verdict,
            faithful=None,
            assessor_format_ok=format_ok,
            attacker_format_ok=True,
            sentence_match=matched,
        ),
        config,
    )
    return AssessorScore(reward=rewards.assessor, format_ok=format_ok, correct=answer.verdict is truth.label)
