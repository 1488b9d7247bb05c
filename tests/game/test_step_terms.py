"""The step-level reward terms on real settled games: format against answers of the same kind, the verdict balance."""

from __future__ import annotations

import pytest
from warfarin_seeds import NOTE, seed_of

from medical_team.common.vocab import Category, Label, Role
from medical_team.game import GameConfig, RewardConfig, settle
from medical_team.game.judging import JudgeVerdict
from medical_team.game.rewards import FORMAT, VERDICT_BALANCE
from medical_team.game.step_terms import MISSED, REALISED, answer_kind, step_shares, with_step_terms


def vanilla(truth: Label, answer: str, broken: bool = False):
    """A vanilla game on a note of this truth, answered with `answer` (broken: text after the answer)."""
    text = f"Checked. </think> <answer> {answer} </answer>" + (" more" if broken else "")
    return settle(seed_of(Category.of(truth, adversarial=False)), None, text, None, GameConfig())


def test_a_kinds_format_term_is_measured_against_its_own_mean() -> None:
    games = [
        vanilla(Label.ERROR, "verdict: ERROR"),
        vanilla(Label.ERROR, "verdict: ERROR", broken=True),
        vanilla(Label.NO_ERROR, "verdict: NO_ERROR"),
        vanilla(Label.NO_ERROR, "verdict: NO_ERROR"),
        vanilla(Label.ERROR, "no idea"),  # unreadable: no kind
    ]
    shares = step_shares(games)
    assert shares.compliance == {(Role.ASSESSOR, "error"): 0.5, (Role.ASSESSOR, "no_error"): 1.0}
    assert shares.error_share == 0.5
    stepped = with_step_terms(games, RewardConfig())
    assert [g.assessor_terms["format"] for g in stepped] == [FORMAT / 2, -FORMAT / 2, 0.0, 0.0, -FORMAT]
    assert [g.assessor_terms["balance"] for g in stepped] == [0.0] * 5
    # a right ERROR answer that broke a rule still scores above every wrong answer
    assert stepped[1].assessor_reward == 1 - FORMAT / 2 and stepped[4].assessor_reward == -1 - FORMAT


def test_the_rare_verdicts_right_answers_earn_the_balance_outside_the_band() -> None:
    games = [vanilla(Label.NO_ERROR, "verdict: NO_ERROR") for _ in range(3)]
    games += [vanilla(Label.ERROR, "verdict: NO_ERROR"), vanilla(Label.ERROR, "verdict: ERROR")]
    assert step_shares(games).error_share == 0.2
    balance = [g.assessor_terms["balance"] for g in with_step_terms(games, RewardConfig())]
    assert balance == [0.0, 0.0, 0.0, 0.0, VERDICT_BALANCE]  # only the right ERROR answer
    one = [vanilla(Label.ERROR, "verdict: ERROR"), vanilla(Label.ERROR, "nothing readable")]
    assert step_shares(one).error_share is None  # one readable verdict: no share, no balance
    assert [g.assessor_terms["balance"] for g in with_step_terms(one, RewardConfig())] == [0.0, 0.0]


def test_rewrites_are_compared_with_rewrites_of_the_same_kind_and_dropped_ties_stay_out() -> None:
    harmful = seed_of(Category.ADVERSARIAL_HARMFUL)
    answer = "Checked. </think> <answer> verdict: ERROR </answer>"

    def attack(error_present: bool | None, broken: bool):
        rewrite = f"Kept. </think> <answer> {NOTE} </answer>" + (" more" if broken else "")
        judged = JudgeVerdict(error_present, True) if error_present is not None else JudgeVerdict(None, None, tie=True)
        return settle(harmful, rewrite, answer, judged, GameConfig())

    games = [attack(True, False), attack(True, True), attack(False, True), attack(None, True)]
    assert [answer_kind(g, Role.ATTACKER) for g in games] == [REALISED, REALISED, MISSED, None]
    assert games[3].dropped
    stepped = with_step_terms(games, RewardConfig())
    assert [g.attacker_terms["format"] for g in stepped[:3]] == [FORMAT / 2, -FORMAT / 2, 0.0]
    assert stepped[3] == games[3]
    assert step_shares(games).compliance[(Role.ATTACKER, MISSED)] == 0.0


@pytest.mark.parametrize("share", [0.25, 0.75])
def test_the_band_is_inclusive(share: float) -> None:
    errors = round(share * 4)
    games = [vanilla(Label.ERROR, "verdict: ERROR") for _ in range(errors)]
    games += [vanilla(Label.NO_ERROR, "verdict: NO_ERROR") for _ in range(4 - errors)]
    assert all(g.assessor_terms["balance"] == 0.0 for g in with_step_terms(games, RewardConfig()))
