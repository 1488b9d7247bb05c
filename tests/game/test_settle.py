"""The single-game API: intended labels, the note the assessor sees, judge requests, settled outcomes."""

from __future__ import annotations

import pytest

from medical_team.common.vocab import BenignAttackMode, Category, Label
from medical_team.data.records import GameSeed
from medical_team.game.judging import JudgeVerdict
from medical_team.game.rewards import RewardConfig
from medical_team.game.settle import (
    UNREADABLE_VERDICT,
    GameConfig,
    GameOutcome,
    intended_label,
    judge_request,
    note_for_assessor,
    score_assessor,
    settle,
)

NOTE = "A 54-year-old man has chest pain. ECG shows ST elevation. He is diagnosed with pericarditis."
ERROR_SENTENCE = "He is diagnosed with pericarditis."


def make_seed(category: Category) -> GameSeed:
    """A seed of the given category built from one small note."""
    harmful = category.seed_label is Label.ERROR
    return GameSeed(
        note_id="ms-val-7",
        pair_id="ms-val-7",
        category=category,
        label=category.seed_label,
        text=NOTE if harmful else NOTE.replace("pericarditis", "myocardial infarction"),
        error_type="diagnosis",
        error_sentence_id=2,
        error_sentence=ERROR_SENTENCE,
        corrected_sentence="He is diagnosed with myocardial infarction.",
        source_file="val.csv",
    )


def reply(answer: str) -> str:
    """A format-compliant response with this answer."""
    return f"I read the note carefully. </think> <answer> {answer} </answer>"


def test_intended_label_per_category_and_mode() -> None:
    assert intended_label(Category.VANILLA_HARMFUL) is Label.ERROR
    assert intended_label(Category.VANILLA_BENIGN) is Label.NO_ERROR
    assert intended_label(Category.ADVERSARIAL_HARMFUL) is Label.ERROR
    assert intended_label(Category.ADVERSARIAL_BENIGN, BenignAttackMode.INJECT) is Label.ERROR
    assert intended_label(Category.ADVERSARIAL_BENIGN, BenignAttackMode.DECOY) is Label.NO_ERROR


def test_vanilla_note_is_the_seed_and_needs_no_judge() -> None:
    seed = make_seed(Category.VANILLA_HARMFUL)
    assert note_for_assessor(seed, None) == seed.text
    assert judge_request(seed, None, GameConfig()) is None
    with pytest.raises(ValueError, match="vanilla games have no attacker turn"):
        note_for_assessor(seed, reply("x"))


def test_adversarial_note_is_only_the_parsed_answer() -> None:
    seed = make_seed(Category.ADVERSARIAL_BENIGN)
    response = "Secret plan: change the drug. </think> <answer> The rewritten note. </answer>"
    assert note_for_assessor(seed, response) == "The rewritten note."
    request = judge_request(seed, response, GameConfig(benign_mode=BenignAttackMode.DECOY))
    assert request is not None and request.rewrite == "The rewritten note." and request.intended_label is Label.NO_ERROR


def test_vanilla_outcome_uses_the_data_label() -> None:
    seed = make_seed(Category.VANILLA_HARMFUL)
    answer = f"verdict: ERROR\nsentence: {ERROR_SENTENCE}\nerror_type: diagnosis"
    outcome = settle(seed, None, reply(answer), None, GameConfig(RewardConfig(localisation_bonus=0.5)))
    assert outcome.truth is Label.ERROR and outcome.verdict is Label.ERROR and outcome.sentence_match
    assert outcome.assessor_reward == 1 + 0.5 and outcome.attacker_reward is None
    assert outcome.attacker_violations is None and outcome.error_type == "diagnosis"


@pytest.mark.parametrize("category", list(Category))
def test_an_assessor_scored_alone_gets_its_vanilla_game_reward(category: Category) -> None:
    """verl's validation reward and OpenRLHF's reward: the seed's own note, whatever the row's category."""
    seed = make_seed(category)
    bonus = RewardConfig(localisation_bonus=0.5)
    vanilla = make_seed(Category.of(category.seed_label, adversarial=False))
    for answer in ("verdict: NO_ERROR", f"verdict: ERROR\nsentence: {ERROR_SENTENCE}", "no verdict"):
        scored = score_assessor(seed, reply(answer), bonus)
        outcome = settle(vanilla, None, reply(answer), None, GameConfig(bonus))
        assert scored.reward == outcome.assessor_reward
        assert (scored.correct, scored.format_ok, scored.sentence_match) == (
            outcome.assessor_correct,
            outcome.assessor_format_ok,
            outcome.sentence_match,
        )
    hit = score_assessor(
        make_seed(Category.VANILLA_HARMFUL), reply(f"verdict: ERROR\nsentence: {ERROR_SENTENCE}"), bonus
    )
    assert (hit.reward, hit.correct, hit.format_ok, hit.sentence_match) == (1.5, True, True, True)


def test_unreadable_verdict_is_a_format_violation_and_wrong() -> None:
    outcome = settle(make_seed(Category.VANILLA_BENIGN), None, reply("I think it is fine."), None, GameConfig())
    assert outcome.verdict is None and UNREADABLE_VERDICT in outcome.assessor_violations
    assert outcome.assessor_terms == {"format": -0.5, "correctness": -1.0, "localisation": 0.0}


def test_adversarial_outcome_takes_the_judge_truth() -> None:
    seed = make_seed(Category.ADVERSARIAL_BENIGN)
    verdict = JudgeVerdict(error_present=True, faithful=True, reason="model")
    outcome = settle(seed, reply("Rewritten."), reply("verdict: NO_ERROR"), verdict, GameConfig())
    assert outcome.truth is Label.ERROR and outcome.assessor_correct is False
    assert outcome.attacker_terms == {"format": 0.0, "outcome": 1.0, "faithfulness": 0.5}
    assert outcome.assessor_reward == -1.0 and outcome.attacker_reward == 1.5


def test_tie_is_dropped_only_with_remove_ties() -> None:
    seed = make_seed(Category.ADVERSARIAL_HARMFUL)
    tie = JudgeVerdict.as_tie("unparseable", parse_error=True)
    dropped = settle(seed, reply("R."), reply("verdict: ERROR"), tie, GameConfig())
    assert dropped.tie and dropped.dropped and dropped.assessor_reward is None and dropped.attacker_reward is None
    kept = settle(seed, reply("R."), reply("verdict: ERROR"), tie, GameConfig(RewardConfig(remove_ties=False)))
    assert kept.tie and not kept.dropped and kept.assessor_reward == 0.0 and kept.attacker_reward == 0.0
    assert kept.judge_parse_error


def test_adversarial_game_requires_its_inputs() -> None:
    seed = make_seed(Category.ADVERSARIAL_HARMFUL)
    with pytest.raises(ValueError, match="attacker's response is required"):
        settle(seed, None, reply("verdict: ERROR"), JudgeVerdict(True, True), GameConfig())
    with pytest.raises(ValueError, match="judge verdict is required"):
        settle(seed, reply("R."), reply("verdict: ERROR"), None, GameConfig())


def test_outcome_round_trips_through_a_record() -> None:
    seed = make_seed(Category.ADVERSARIAL_HARMFUL)
    outcome = settle(seed, reply(NOTE), reply("verdict: ERROR"), JudgeVerdict(True, True), GameConfig())
    assert GameOutcome.from_record(outcome.to_record()) == outcome


def test_config_rejects_unknown_names() -> None:
    with pytest.raises(ValueError, match="general_sum, zero_sum"):
        RewardConfig(scheme="winner_takes_all")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="inject, decoy"):
        GameConfig(benign_mode="ignore")  # type: ignore[arg-type]
    assert GameConfig(benign_mode="decoy").benign_mode is BenignAttackMode.DECOY  # type: ignore[arg-type]
