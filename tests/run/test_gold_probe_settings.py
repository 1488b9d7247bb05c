"""The gold-probe keys of `medplay.judge`: defaults, who is probed, and every bad value named."""

from __future__ import annotations

import pytest

from medical_team.common.errors import UserInputError
from medical_team.run.settings import selfplay_settings


def test_gold_keys_are_validated(medplay_section):
    def with_judge(**judge: object) -> dict:
        return {**medplay_section, "judge": {**medplay_section["judge"], **judge}}

    settings = selfplay_settings(with_judge(backend="hf", model="m", gold_probe_fraction=0.5))
    assert settings.judge.probed and settings.judge.gold_min_count == 40
    assert not selfplay_settings(with_judge(backend="rules")).judge.probed
    with pytest.raises(UserInputError) as caught:
        selfplay_settings(with_judge(gold_probe_fraction=1.5, gold_accuracy_floor="x", gold_min_count=0))
    message = str(caught.value)
    assert "medplay.judge.gold_probe_fraction: 1.5 must be a number in [0, 1]" in message
    assert "medplay.judge.gold_accuracy_floor: 'x' must be a number in [0, 1]" in message
    assert "medplay.judge.gold_min_count: 0 must be an integer >= 1" in message
