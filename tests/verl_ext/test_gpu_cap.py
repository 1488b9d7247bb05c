"""`medplay.emulate_gpu_gib`: a smaller card's profile on a bigger GPU (medical_team/verl_ext/gpu_cap.py)."""

from __future__ import annotations

import pytest

from medical_team.errors import UserInputError
from medical_team.verl_ext.gpu_cap import FRACTION_ENV, cap_this_worker, emulate_card
from medical_team.verl_ext.launch import compose_config
from medical_team.verl_ext.settings import settings_from_trainer_config


def test_the_48g_profile_on_an_80_gib_card_gets_its_shares_scaled_and_the_workers_cap():
    config = compose_config(["profile=48g", "medplay.emulate_gpu_gib=48"])
    rollout_share = config.actor_rollout_ref.rollout.gpu_memory_utilization
    judge_share = config.medplay.judge.serve.gpu_memory_utilization

    line = emulate_card(config, total_gib=80.0)

    assert config.actor_rollout_ref.rollout.gpu_memory_utilization == pytest.approx(rollout_share * 0.6, abs=1e-4)
    assert config.medplay.judge.serve.gpu_memory_utilization == pytest.approx(judge_share * 0.6, abs=1e-4)
    assert config.ray_kwargs.ray_init.runtime_env.env_vars[FRACTION_ENV] == "0.600000"
    assert line is not None and "48 GiB card" in line and "0.600" in line
    # The judge's server reads its share from the settings, which see the scaled value.
    assert settings_from_trainer_config(config).judge.serve.gpu_memory_utilization == pytest.approx(
        judge_share * 0.6, abs=1e-4
    )


def test_without_the_setting_nothing_changes():
    config = compose_config(["profile=48g"])
    assert emulate_card(config, total_gib=80.0) is None
    assert FRACTION_ENV not in config.ray_kwargs.ray_init.runtime_env.env_vars


def test_on_the_cpu_the_setting_is_a_noted_no_op():
    config = compose_config(["profile=cpu-smoke", "medplay.emulate_gpu_gib=24"])
    assert "no effect on the CPU" in emulate_card(config, total_gib=None)
    assert FRACTION_ENV not in config.ray_kwargs.ray_init.runtime_env.env_vars


def test_a_cap_not_smaller_than_the_card_is_refused():
    config = compose_config(["profile=80g", "medplay.emulate_gpu_gib=96"])
    with pytest.raises(UserInputError, match="medplay.emulate_gpu_gib.*not smaller than this GPU's 79.2 GiB"):
        emulate_card(config, total_gib=79.2)


def test_a_bad_value_is_named_before_ray():
    config = compose_config(["profile=48g", "medplay.emulate_gpu_gib=-4"])
    with pytest.raises(UserInputError, match="medplay.emulate_gpu_gib: -4 must be null or a number of GiB > 0"):
        settings_from_trainer_config(config)


def test_outside_a_gpu_worker_the_cap_is_not_applied(monkeypatch):
    monkeypatch.setenv(FRACTION_ENV, "0.5")
    assert cap_this_worker() is None  # no Ray worker holding a GPU here
    monkeypatch.delenv(FRACTION_ENV)
    assert cap_this_worker() is None
