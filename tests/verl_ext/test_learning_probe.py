"""The learning probe's reward: first-token parity per role, exchanged in the control run."""

from __future__ import annotations

import pytest

from medical_team.verl_ext.learning_probe import probe_hit, probe_metrics
from medical_team.verl_ext.settings import ProbeSettings
from medical_team.vocab import Role

PROBE = ProbeSettings(enabled=True)
CONTROL = ProbeSettings(enabled=True, swapped=True)


@pytest.mark.parametrize(("first", "assessor", "attacker"), [(10, True, False), (11, False, True)])
def test_roles_are_rewarded_for_opposite_parities_of_the_first_token(first: int, assessor: bool, attacker: bool) -> None:
    assert probe_hit(PROBE, Role.ASSESSOR, [first, 3, 5]) is assessor
    assert probe_hit(PROBE, Role.ATTACKER, [first, 2, 4]) is attacker
    assert probe_hit(CONTROL, Role.ASSESSOR, [first]) is not assessor
    assert probe_hit(CONTROL, Role.ATTACKER, [first]) is not attacker


def test_an_empty_response_never_hits() -> None:
    assert not probe_hit(PROBE, Role.ASSESSOR, []) and not probe_hit(CONTROL, Role.ATTACKER, [])


def test_metrics_are_per_role_rates_and_absent_without_hits() -> None:
    metrics = probe_metrics([("assessor", True), ("assessor", False), ("attacker", True)])
    assert metrics == {
        "probe/assessor/hit_rate": 0.5,
        "probe/assessor/turns": 2.0,
        "probe/attacker/hit_rate": 1.0,
        "probe/attacker/turns": 1.0,
    }
    assert probe_metrics([]) == {}
