"""A ledger record round-trips into a StepGame; the step-level terms' reward deltas land on the rows that train."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

import pytest

from medical_team.common.vocab import Category
from medical_team.data.medec import load_medec
from medical_team.data.seeds import build_seeds
from medical_team.game import GameConfig, RewardConfig, RewardScheme, settle
from medical_team.game.judging import JudgeVerdict
from medical_team.game.monitors import GameTrace
from medical_team.game.rewards import FORMAT
from medical_team.run.step_games import StepGame, ledger_record
from medical_team.task_runner.step_rewards import step_deltas

BAND = GameConfig(rewards=RewardConfig(scheme=RewardScheme.DIFFICULTY_BAND))


def test_step_deltas_are_each_trained_rows_step_terms() -> None:
    resource = importlib.resources.files("medical_team.data.resources")
    csv = Path(str(resource / "MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"))
    seeds = [s for s in build_seeds(load_medec(csv).notes, seed=0) if s.category is Category.ADVERSARIAL_HARMFUL][:3]
    games = []
    # the first assessor answer breaks a rule (text after the answer) but its verdict stays readable
    answers = ["verdict: ERROR </answer> p.s.", "verdict: NO_ERROR </answer>", "verdict: ERROR </answer>"]
    for i, (seed, answer) in enumerate(zip(seeds, answers, strict=True)):
        outcome = settle(
            seed,
            f"x </think> <answer> {seed.text} </answer>",
            f"x </think> <answer> {answer}",
            JudgeVerdict(True, True),
            BAND,
        )
        trace = GameTrace(seed.text, seed.text, 5, 4, 48, "x </think> <answer> verdict")
        row_keys = {"attacker": f"u{i}_attacker_0_0", "assessor": f"u{i}_assessor_0_0"} if i < 2 else {}
        games.append(StepGame.from_record(ledger_record(outcome.to_record(), trace.to_record(), row_keys)))
    assert games[0].trace == GameTrace(seeds[0].text, seeds[0].text, 5, 4, 48, "x </think> <answer> verdict")
    assert "outcome" not in games[0].outcome.attacker_terms  # settled per game without it
    # one seed each: the category's rate, 2 of 3 right -> 2 * min(2/3, 1/3); the third game's rows do not train.
    # ERROR answers: one of two broke a rule, so their mean format term is -FORMAT / 2 and the broken one's format
    # term -FORMAT becomes -FORMAT / 2. The lone NO_ERROR answer, the rewrites (all realised, all compliant) and
    # the verdict balance (ERROR share 2/3, inside the band) change nothing.
    assert step_deltas(games, BAND.rewards) == {
        "u0_attacker_0_0": pytest.approx(2 / 3),
        "u1_attacker_0_0": pytest.approx(2 / 3),
        "u0_assessor_0_0": pytest.approx(FORMAT / 2),
    }
