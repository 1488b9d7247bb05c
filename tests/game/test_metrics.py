"""Per-step game metrics: exact values on a hand-made batch, and the same keys for every batch."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from medical_team.common.vocab import ERROR_TYPES, Category, Label
from medical_team.data.records import GameSeed
from medical_team.game.judging import JudgeVerdict
from medical_team.game.metrics import game_metrics, metric_names
from medical_team.game.settle import GameConfig, GameOutcome, JudgeStats, settle

SENTENCE = "Amoxicillin was started for the viral infection."


def seed(category: Category, error_type: str = "pharmacotherapy") -> GameSeed:
    """A seed of this category (benign seeds know no error)."""
    harmful = category.seed_label is Label.ERROR
    return GameSeed(
        note_id=f"n-{category.value}",
        pair_id="p",
        category=category,
        label=category.seed_label,
        text=f"A child with a cough. {SENTENCE}",
        error_type=error_type if harmful else None,
        error_sentence_id=1 if harmful else -1,
        error_sentence=SENTENCE if harmful else None,
        corrected_sentence="Supportive care was given." if harmful else None,
        source_file="val.csv",
    )


def ok(answer: str) -> str:
    """A compliant response."""
    return f"Thinking. </think> <answer>\n{answer}\n</answer>"


ERROR = ok(f"verdict: ERROR\nsentence: {SENTENCE}")
NO_ERROR = ok("verdict: NO_ERROR")


def batch() -> list[GameOutcome]:
    """Eight games with known truths, verdicts and judge results."""
    config = GameConfig()
    vh, vb = Category.VANILLA_HARMFUL, Category.VANILLA_BENIGN
    ah, ab = Category.ADVERSARIAL_HARMFUL, Category.ADVERSARIAL_BENIGN
    rewrite = ok(f"A child with a cough. {SENTENCE}")
    return [
        settle(seed(vh), None, ERROR, None, config),  # right, sentence matched
        settle(seed(vh, "diagnosis"), None, NO_ERROR, None, config),  # miss
        settle(seed(vb), None, NO_ERROR, None, config),  # right
        settle(seed(vb), None, "garbage, no tags", None, config),  # unreadable: wrong, format violation
        settle(seed(ah), rewrite, NO_ERROR, JudgeVerdict(True, True), config),  # attacker wins, faithful
        settle(seed(ah), rewrite, ERROR, JudgeVerdict(True, False), config),  # attacker loses, unfaithful
        settle(seed(ab), "no format", ERROR, JudgeVerdict(False, True), config),  # false alarm; not realised
        settle(seed(ab), rewrite, ERROR, JudgeVerdict.as_tie("judge down"), config),  # tie, dropped
    ]


def test_values_on_a_known_batch() -> None:
    m = game_metrics(batch(), JudgeStats(invocations=2, requests=4, seconds=3.0))
    expected = {
        "game/count/vanilla_harmful": 2,
        "game/count/adversarial_benign": 2,
        "game/games": 8,
        "game/ties_removed": 1,
        "game/tie_rate": 1 / 8,
        "game/error_note_rate": 4 / 7,
        "assessor/accuracy": 3 / 7,
        "assessor/accuracy/vanilla_harmful": 1 / 2,
        "assessor/accuracy/vanilla_benign": 1 / 2,
        "assessor/accuracy/adversarial_harmful": 1 / 2,
        "assessor/accuracy/adversarial_benign": 0.0,
        "assessor/recall/pharmacotherapy": 2 / 3,
        "assessor/recall/diagnosis": 0.0,
        "assessor/recall/management": 0.0,
        "assessor/false_alarm_rate": 2 / 3,
        "assessor/miss_rate": 2 / 4,
        "assessor/sentence_accuracy": 2 / 4,
        # rewards (correctness + format): 1, -1, 1, -1.5, -1, 1, -1 over the 7 kept games
        "assessor/reward_mean": -1.5 / 7,
        "assessor/format_violation_rate": 1 / 8,
        "assessor/error_verdict_rate": 4 / 8,  # the tie's verdict included, like the format rate
        "assessor/reward_mean/verdict_error": (1 + 1 - 1) / 3,  # the tie kept no sample
        "assessor/reward_mean/verdict_no_error": (-1 + 1 - 1) / 3,
        "assessor/format_violation_rate/verdict_error": 0.0,
        "assessor/format_violation_rate/verdict_no_error": 0.0,
        "attacker/success_rate": 2 / 3,
        "attacker/success_rate/adversarial_harmful": 1 / 2,
        "attacker/success_rate/adversarial_benign": 1.0,
        "attacker/faithfulness_rate": 1 / 3,
        # attacker rewards (format + outcome + faithfulness): 0+1+0.5, 0-1-0.5, -0.5+1-0.5 over the 3 kept games
        "attacker/reward_mean": (1.5 - 1.5 + 0.0) / 3,
        "attacker/format_violation_rate": 1 / 4,  # ties included: the attacker did play
        "judge/calls": 4,
        "judge/parse_error_rate": 0.0,
        "judge/latency_s": 1.5,
    }
    for name, value in expected.items():
        assert m[name] == pytest.approx(value), name


def test_per_verdict_figures_show_which_verdict_breaks_the_format() -> None:
    config = GameConfig()
    vh, vb = seed(Category.VANILLA_HARMFUL), seed(Category.VANILLA_BENIGN)
    run_on = f"{ERROR} and more"  # text after </answer>: the verdict reads, the format term is lost
    games = [settle(vh, None, ERROR, None, config), settle(vh, None, run_on, None, config)]
    games += [settle(vb, None, NO_ERROR, None, config), settle(vh, None, NO_ERROR, None, config)]
    m = game_metrics(games)
    assert m["assessor/error_verdict_rate"] == 0.5
    assert m["assessor/format_violation_rate/verdict_error"] == 0.5
    assert m["assessor/format_violation_rate/verdict_no_error"] == 0.0
    # right and well-formed 1, right and run-on 0.5; right 1, a miss -1
    assert m["assessor/reward_mean/verdict_error"] == 0.75 and m["assessor/reward_mean/verdict_no_error"] == 0.0


def test_parse_errors_are_counted() -> None:
    config = GameConfig()
    outcome = settle(
        seed(Category.ADVERSARIAL_HARMFUL), ok("x"), NO_ERROR, JudgeVerdict.as_tie("bad", parse_error=True), config
    )
    assert game_metrics([outcome])["judge/parse_error_rate"] == 1.0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(range(8)), max_size=12))
def test_keys_are_the_same_for_every_batch(picks: list[int]) -> None:
    games = batch()
    m = game_metrics([games[i] for i in picks])
    assert tuple(m) == metric_names()
    assert all(isinstance(v, float) and math.isfinite(v) for v in m.values())


def test_names_cover_every_category_and_error_type() -> None:
    names = set(metric_names())
    assert {f"assessor/recall/{t}" for t in ERROR_TYPES} <= names
    assert {f"game/count/{c.value}" for c in Category} <= names
    assert {f"assessor/accuracy/{c.value}" for c in Category} <= names
