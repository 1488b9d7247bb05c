"""The launcher starts Ray with exactly the arguments verl's own `run_ppo` would pass to `ray.init`.

verl's real `run_ppo` runs up to its `ray.init` call, which records its arguments and stops it; the
launcher's `ray_init_kwargs` must give the same. If a verl release changes how it starts Ray, this fails.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import ray
from verl.trainer.main_ppo import TaskRunnerV1, run_ppo

from medical_team.launcher.config.compose import compose_config
from medical_team.launcher.ray_start import prepare_driver_environment, ray_init_kwargs

# What run_ppo may export in the driver before ray.init.
DRIVER_VARIABLES = ("VERL_FULL_DETERMINISM", "VLLM_BATCH_INVARIANT", "PYTHONHASHSEED", "VERL_RL_INSIGHT_ENABLE")


class _StopBeforeRay(Exception):
    """Raised by the recording ray.init so that verl's run_ppo goes no further."""


def verl_ray_init_call(config, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], dict[str, str]]:
    """The keyword arguments verl's run_ppo passes to ray.init, and the environment it set before."""
    recorded: dict[str, Any] = {}

    def record(**kwargs: Any) -> None:
        recorded.update(kwargs)
        raise _StopBeforeRay

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", record)
    with pytest.raises(_StopBeforeRay):
        run_ppo(config, task_runner_class=TaskRunnerV1)
    return recorded, dict(os.environ)


@pytest.mark.parametrize(
    "overrides",
    [
        ["profile=cpu-smoke"],
        ["profile=80g", "actor_rollout_ref.rollout.full_determinism=true", "trainer.logger=[console,rl_insight]"],
    ],
    ids=["cpu-smoke", "80g-deterministic"],
)
def test_ray_is_started_with_verls_own_arguments(overrides: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name in DRIVER_VARIABLES:  # set, then removed: monkeypatch restores the original state afterwards
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    config = compose_config(overrides)
    prepare_driver_environment(config)
    ours, our_env = ray_init_kwargs(config), dict(os.environ)
    for name in DRIVER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    verls, verl_env = verl_ray_init_call(config, monkeypatch)
    assert ours == verls
    assert our_env == verl_env
    assert ours["runtime_env"]["env_vars"]["VERL_USE_EXTERNAL_MODULES"]  # medplay's part reached the workers
    if "actor_rollout_ref.rollout.full_determinism=true" in overrides:
        assert our_env["VERL_FULL_DETERMINISM"] == "1" and our_env["VERL_RL_INSIGHT_ENABLE"] == "1"
