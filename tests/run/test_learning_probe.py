"""The learning probe's reward: an independent first-token behaviour per role, penalised in the control run."""

from __future__ import annotations

import pytest

from medical_team.common.vocab import Role
from medical_team.run.learning_probe import probe_metrics, probe_reward, shows_behaviour
from medical_team.run.settings import ProbeSettings

VOCAB = 1024


@pytest.mark.parametrize(
    ("first", "assessor", "attacker"), [(10, True, True), (11, False, True), (600, True, False), (601, False, False)]
)
def test_each_role_has_its_own_first_token_behaviour(first: int, assessor: bool, attacker: bool) -> None:
    assert shows_behaviour(Role.ASSESSOR, [first, 3, 5], VOCAB) is assessor
    assert shows_behaviour(Role.ATTACKER, [first, 700, 900], VOCAB) is attacker


def test_the_behaviours_split_the_vocabulary_in_independent_halves() -> None:
    both = [
        (shows_behaviour(Role.ASSESSOR, [t], VOCAB), shows_behaviour(Role.ATTACKER, [t], VOCAB)) for t in range(VOCAB)
    ]
    for pair in ((True, True), (True, False), (False, True), (False, False)):
        assert both.count(pair) == VOCAB // 4


def test_an_empty_response_shows_no_behaviour() -> None:
    assert not shows_behaviour(Role.ASSESSOR, [], VOCAB) and not shows_behaviour(Role.ATTACKER, [], VOCAB)


def test_the_control_rewards_the_opposite() -> None:
    probe, control = ProbeSettings(enabled=True, inverted=False), ProbeSettings(enabled=True, inverted=True)
    assert (probe_reward(probe, True), probe_reward(probe, False)) == (1.0, 0.0)
    assert (probe_reward(control, True), probe_reward(control, False)) == (0.0, 1.0)


def test_metrics_are_per_role_rates_and_absent_without_observations() -> None:
    metrics = probe_metrics([("assessor", True), ("assessor", False), ("attacker", True)])
    assert metrics == {
        "probe/assessor/behaviour_rate": 0.5,
        "probe/assessor/turns": 2.0,
        "probe/attacker/behaviour_rate": 1.0,
        "probe/attacker/turns": 1.0,
    }
    assert probe_metrics([]) == {}
