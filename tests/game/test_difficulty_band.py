"""The `difficulty_band` scheme: its outcome term's range and zeros (property tests), and the rate each game uses."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from warfarin_seeds import NOTE, seed_of

from medical_team.common.vocab import Category
from medical_team.game.difficulty_band import assessor_success_rates, band_outcome, with_band_outcomes
from medical_team.game.judging import JudgeVerdict
from medical_team.game.rewards import FAITHFULNESS, OUTCOME, RewardConfig, RewardScheme
from medical_team.game.settle import GameConfig, GameOutcome, settle

BAND = GameConfig(rewards=RewardConfig(scheme=RewardScheme.DIFFICULTY_BAND))
RATES = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


def game(category: Category, note_id: str, assessor_right: bool, tie: bool = False) -> GameOutcome:
    """A settled band game whose rewrite realises an error (the judge says so) and whose assessor is right or not."""
    verdict = "verdict: ERROR" if assessor_right else "verdict: NO_ERROR"
    judge = JudgeVerdict.as_tie("down") if tie else JudgeVerdict(True, True)
    attacker = None if not category.adversarial else f"Subtle. </think> <answer> {NOTE} </answer>"
    return settle(
        seed_of(category, note_id),
        attacker,
        f"Hm. </think> <answer> {verdict} </answer>",
        judge if category.adversarial else None,
        BAND,
    )


@settings(max_examples=300)
@given(RATES)
def test_band_outcome_lies_between_zero_and_the_outcome_reward(p: float) -> None:
    assert 0.0 <= band_outcome(p) <= OUTCOME


@settings(max_examples=200)
@given(RATES)
def test_band_outcome_is_symmetric_and_peaks_at_one_half(p: float) -> None:
    assert band_outcome(p) == pytest.approx(band_outcome(1.0 - p))
    assert band_outcome(p) <= band_outcome(0.5) == OUTCOME


def test_band_outcome_is_zero_when_the_assessor_is_always_right_or_always_wrong() -> None:
    assert band_outcome(0.0) == 0.0 and band_outcome(1.0) == 0.0


@pytest.mark.parametrize("p", [-0.1, 1.1, float("nan")])
def test_band_outcome_rejects_a_rate_outside_zero_one(p: float) -> None:
    with pytest.raises(ValueError, match="success rate"):
        band_outcome(p)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(list(Category)), st.integers(0, 3), st.booleans(), st.booleans()),
        min_size=1,
        max_size=24,
    )
)
def test_every_banded_game_gets_an_outcome_in_range_and_zero_at_the_extremes(plays: list) -> None:
    games = [game(category, f"n{note}", right, tie) for category, note, right, tie in plays]
    rates = assessor_success_rates(games)
    for played, banded, rate in zip(games, with_band_outcomes(games), rates, strict=True):
        if not played.adversarial or played.tie:
            assert rate is None and banded == played  # vanilla games and ties are left alone
            continue
        assert rate is not None and 0.0 <= rate <= 1.0
        outcome = banded.attacker_terms["outcome"]
        assert 0.0 <= outcome <= OUTCOME
        if rate in (0.0, 1.0):
            assert outcome == 0.0
        others = {k: v for k, v in banded.attacker_terms.items() if k != "outcome"}
        assert others == played.attacker_terms  # faithfulness and format as general_sum scores them


def test_a_seed_played_twice_uses_its_own_rate_and_a_single_one_its_categorys() -> None:
    ah, ab = Category.ADVERSARIAL_HARMFUL, Category.ADVERSARIAL_BENIGN
    games = [
        game(ah, "twice", True),
        game(ah, "twice", False),  # this seed: 1 of 2 right -> p = 0.5
        game(ah, "once-a", True),
        game(ah, "once-b", True),  # single seeds: the category's decided games, 3 of 4 right -> p = 0.75
        game(ab, "alone", False),  # the only benign game: p = 0
        game(ab, "tied", True, tie=True),
        game(Category.VANILLA_HARMFUL, "vanilla", True),
    ]
    assert assessor_success_rates(games) == [0.5, 0.5, 0.75, 0.75, 0.0, None, None]
    outcomes = [g.attacker_terms.get("outcome") if g.attacker_terms else None for g in with_band_outcomes(games)]
    assert outcomes == [1.0, 1.0, 0.5, 0.5, 0.0, None, None]


def test_per_game_band_scoring_leaves_the_outcome_to_the_step() -> None:
    played = game(Category.ADVERSARIAL_HARMFUL, "n", assessor_right=False)
    assert played.attacker_terms == {"format": 0.0, "faithfulness": FAITHFULNESS}  # compliant: no format loss
    assert played.assessor_terms["correctness"] == -1.0  # the assessor's terms are general_sum's
