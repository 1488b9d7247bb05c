"""Reward tables: general_sum against docs/game.md's table for every combination, zero_sum's zero-sum property."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from warfarin_seeds import ERROR_SENTENCE, NOTE, seed_of

from medical_team.common.vocab import BenignAttackMode, Category, Label
from medical_team.game.judging import JudgeVerdict
from medical_team.game.rewards import RewardConfig, RewardScheme, ScoreInputs, score_game
from medical_team.game.settle import GameConfig, intended_label, settle

VERDICT_TEXT = {
    Label.ERROR: f"verdict: ERROR\nsentence: {ERROR_SENTENCE}",
    Label.NO_ERROR: "verdict: NO_ERROR",
    None: "unsure",
}


def response(answer: str, compliant: bool) -> str:
    """A response with this answer that keeps or breaks the format (text after `</answer>`)."""
    return f"Reasoning. </think> <answer> {answer} </answer>" + ("" if compliant else " trailing")


def table_general_sum(truth, verdict, faithful, intended, fmt_assessor, fmt_attacker, adversarial, bonus):
    """The general_sum table of docs/game.md ("Rewards"), written out term by term."""
    format_ok_assessor = fmt_assessor and verdict is not None  # an unreadable verdict is a format violation
    correct = verdict is not None and verdict == truth
    assessor = (1 if correct else -1) + (0 if format_ok_assessor else -0.5)
    if truth == Label.ERROR and verdict == Label.ERROR:
        assessor += bonus  # the quoted sentence is always the known one here
    if not adversarial:
        return assessor, None
    attacker = (
        (0.5 if faithful and truth == intended else -0.5) + (-1 if correct else 1) + (0 if fmt_attacker else -0.5)
    )
    return assessor, attacker


COMBOS = [
    (category, truth, verdict, faithful, fa, fb, mode)
    for category, truth, verdict, faithful, fa, fb, mode in itertools.product(
        Category,
        Label,
        (Label.ERROR, Label.NO_ERROR, None),
        (True, False),
        (True, False),
        (True, False),
        BenignAttackMode,
    )
    # vanilla games: the truth is the seed's label, no judge, no attacker; benign mode matters only for adversarial_benign
    if (category.adversarial or (truth is category.seed_label and faithful and fb))
    and (category is Category.ADVERSARIAL_BENIGN or mode is BenignAttackMode.INJECT)
]


@pytest.mark.parametrize("bonus", [0.0, 0.25])
def test_general_sum_matches_the_table_for_every_combination(bonus: float) -> None:
    # adversarial_harmful 48, adversarial_benign 48 per benign mode, vanilla 6 per category
    assert len(COMBOS) == 48 + 2 * 48 + 2 * 6
    for category, truth, verdict, faithful, fmt_assessor, fmt_attacker, mode in COMBOS:
        config = GameConfig(RewardConfig(localisation_bonus=bonus), benign_mode=mode)
        seed = seed_of(category)
        attacker = response(NOTE, fmt_attacker) if category.adversarial else None
        # the judge names the error sentence it found (an injected error is known only this way)
        found = ERROR_SENTENCE if truth is Label.ERROR else None
        judged = JudgeVerdict(truth is Label.ERROR, faithful, found, reason="test") if category.adversarial else None
        outcome = settle(seed, attacker, response(VERDICT_TEXT[verdict], fmt_assessor), judged, config)
        expected = table_general_sum(
            truth,
            verdict,
            faithful,
            intended_label(category, mode),
            fmt_assessor,
            fmt_attacker,
            category.adversarial,
            bonus,
        )
        assert (outcome.assessor_reward, outcome.attacker_reward) == expected, (category, truth, verdict, faithful)


inputs = st.builds(
    ScoreInputs,
    adversarial=st.just(True),
    truth=st.sampled_from([Label.ERROR, Label.NO_ERROR, None]),
    intended=st.sampled_from(list(Label)),
    verdict=st.sampled_from([Label.ERROR, Label.NO_ERROR, None]),
    faithful=st.sampled_from([True, False, None]),
    assessor_format_ok=st.booleans(),
    attacker_format_ok=st.booleans(),
    sentence_match=st.booleans(),
)


@settings(max_examples=500, deadline=None)
@given(inputs=inputs, bonus=st.floats(0, 2))
def test_zero_sum_outcome_terms_sum_to_zero(inputs: ScoreInputs, bonus: float) -> None:
    rewards = score_game(inputs, RewardConfig(scheme=RewardScheme.ZERO_SUM, localisation_bonus=bonus))
    assert rewards.attacker_terms is not None
    assert "faithfulness" not in rewards.attacker_terms
    outcome = rewards.attacker_terms.get("outcome", 0.0)
    assert outcome + rewards.assessor_terms.get("correctness", 0.0) == 0.0
    assert rewards.attacker_terms["format"] == (0.0 if inputs.attacker_format_ok else -0.5)


@settings(max_examples=200, deadline=None)
@given(
    category=st.sampled_from([Category.ADVERSARIAL_HARMFUL, Category.ADVERSARIAL_BENIGN]),
    error_present=st.booleans(),
    faithful=st.booleans(),
    verdict=st.sampled_from(list(VERDICT_TEXT)),
    fmt=st.booleans(),
)
def test_zero_sum_through_settle(category, error_present, faithful, verdict, fmt) -> None:
    config = GameConfig(RewardConfig(scheme="zero_sum"))
    judged = JudgeVerdict(error_present, faithful)
    outcome = settle(seed_of(category), response(NOTE, fmt), response(VERDICT_TEXT[verdict], fmt), judged, config)
    assert outcome.attacker_terms["outcome"] + outcome.assessor_terms["correctness"] == 0.0


def test_tie_scores_only_format() -> None:
    inputs = ScoreInputs(True, None, Label.ERROR, Label.ERROR, None, True, False)
    rewards = score_game(inputs, RewardConfig())
    assert rewards.assessor_terms == {"format": 0.0} and rewards.attacker_terms == {"format": -0.5}


def test_localisation_bonus_needs_error_verdict_on_an_error_note_and_a_match() -> None:
    config = RewardConfig(localisation_bonus=0.5)
    base = {
        "adversarial": False,
        "intended": Label.ERROR,
        "faithful": None,
        "assessor_format_ok": True,
        "attacker_format_ok": True,
    }
    hit = score_game(ScoreInputs(truth=Label.ERROR, verdict=Label.ERROR, sentence_match=True, **base), config)
    miss = score_game(ScoreInputs(truth=Label.ERROR, verdict=Label.ERROR, sentence_match=False, **base), config)
    clean = score_game(ScoreInputs(truth=Label.NO_ERROR, verdict=Label.ERROR, sentence_match=True, **base), config)
    assert (hit.assessor, miss.assessor, clean.assessor) == (1.5, 1.0, -1.0)


@pytest.mark.parametrize("bonus", [-0.1, float("nan"), float("inf")])
def test_bad_bonus_is_rejected(bonus: float) -> None:
    with pytest.raises(ValueError, match="localisation_bonus"):
        RewardConfig(localisation_bonus=bonus)
