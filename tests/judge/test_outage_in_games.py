"""A judge server that dies mid-run: games become counted ties, then the run stops with a clear message."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest
from judge_helpers import rules_app

from medical_team.common.vocab import Category, Role
from medical_team.data.records import GameSeed
from medical_team.game.batch import play_batch
from medical_team.game.prompts import Message
from medical_team.judge.client import HttpJudge
from medical_team.judge.outage import JudgeUnavailableError
from medical_team.judge.retry import RetryPolicy
from medical_team.judge_server.serving import BackgroundServer


class ScriptedPolicy:
    """A deterministic policy: the attacker rewords the note slightly, the assessor always says NO_ERROR."""

    def generate(self, prompts: Sequence[list[Message]]) -> list[str]:
        """One well-formed response per prompt."""
        return [self._respond(messages) for messages in prompts]

    @staticmethod
    def _respond(messages: list[Message]) -> str:
        if "You are the Attacker" in messages[0]["content"]:
            note = messages[-1]["content"].split("Clinical note:\n", 1)[1]
            return f"Reword it. </think> <answer>{note.replace(' is ', ' was ')}</answer>"
        return "Looks consistent. </think> <answer>verdict: NO_ERROR</answer>"


@pytest.fixture
def seeds(seed_pairs: list[tuple[GameSeed, GameSeed]]) -> list[GameSeed]:
    """Eight games, two of each category."""
    out = []
    for harmful, benign in seed_pairs[7:9]:
        out += [harmful, benign]
        out += [
            dataclasses.replace(harmful, category=Category.VANILLA_HARMFUL),
            dataclasses.replace(benign, category=Category.VANILLA_BENIGN),
        ]
    return out


def test_dead_judge_server_makes_ties_then_stops_the_run(seeds: list[GameSeed]) -> None:
    server = BackgroundServer(rules_app()).start()
    judge = HttpJudge(server.url, retry=RetryPolicy(attempts=2, initial_backoff_s=0.01), max_consecutive_failures=2)

    healthy = play_batch(seeds, ScriptedPolicy(), judge)
    assert healthy.metrics["game/tie_rate"] == 0.0 and healthy.metrics["game/ties_removed"] == 0

    server.stop()
    broken = play_batch(seeds, ScriptedPolicy(), judge)
    assert broken.metrics["game/ties_removed"] == 4
    assert broken.metrics["game/tie_rate"] == 0.5  # every adversarial game, none of the vanilla ones
    assert all("unavailable" in game.outcome.judge_reason for game in broken.games if game.outcome.adversarial)
    # only the vanilla games' assessor turns are left to train on
    samples = [game.outcome.reward(role) for game in broken.games for role in Role]
    assert sum(reward is not None for reward in samples) == 4
    assert judge.stats.metrics()["judge/failed_batches"] == 1.0

    with pytest.raises(JudgeUnavailableError, match=rf"judge at {server.url} failed 2 consecutive batches"):
        play_batch(seeds, ScriptedPolicy(), judge)
