"""The launcher starts Ray with exactly the arguments verl's own `run_ppo` would pass to `ray.init`, without verl.

verl's real `run_ppo` runs up to its `ray.init` call, which records its arguments and stops it; the
launcher's `ray_init_kwargs` (verl's runtime environment written out, medical_team/launcher/ray_start.py) must give
the same, with the driver's environment in each case below. If a verl release changes how it starts Ray, this fails.
The launcher's own modules, up to the task runner's actor, import no verl.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
import ray
from verl.trainer.main_ppo import TaskRunnerV1, run_ppo

from medical_team.launcher.compose import compose_config
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
    ("overrides", "driver_env"),
    [
        (["profile=cpu-smoke"], {}),
        (["profile=80g", "actor_rollout_ref.rollout.full_determinism=true", "trainer.logger=[console,rl_insight]"], {}),
        # a variable of verl's own the driver sets (not overridden), two forwarded ones, the torch profiler's NVTX
        (["profile=80g", "global_profiler.tool=torch"], {"NCCL_DEBUG": "INFO", "NCCL_ALGO": "Ring", "CUBLAS_WORKSPACE_CONFIG": ":4096:8"}),
        (["profile=cpu-smoke"], {"RAY_JOB_CONFIG_JSON_ENV_VAR": '{"runtime_env": {"working_dir": "/job"}}'}),
    ],
    ids=["cpu-smoke", "80g-deterministic", "80g-torch-profiler-driver-env", "cpu-smoke-submitted-job"],
)
def test_ray_is_started_with_verls_own_arguments(
    overrides: list[str], driver_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (*DRIVER_VARIABLES, "NCCL_DEBUG", "NCCL_ALGO", "CUBLAS_WORKSPACE_CONFIG", "RAY_JOB_CONFIG_JSON_ENV_VAR"):
        monkeypatch.setenv(name, "")  # set, then removed: monkeypatch restores the original state afterwards
        monkeypatch.delenv(name)
    for name, value in driver_env.items():
        monkeypatch.setenv(name, value)
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


def test_the_launcher_reaches_the_task_runner_without_importing_verl() -> None:
    """Every module `medplay train`'s launcher imports to start a run, and what it computes before Ray: no verl."""
    code = (
        "import sys\n"
        "from medical_team.launcher import launch, disk_plan, environment, judge_context, out_of_memory, preparation\n"
        "from medical_team.launcher import prompt_lengths, run_plan, judge_run, judge_wait_relay, model_info_warmup\n"
        "from medical_team.launcher import progress, served_judge, graceful_stop, dead_actors, ray_start, watched_run\n"
        "from medical_team.task_runner.actor import SelfPlayTaskRunner\n"
        "from medical_team.launcher.compose import compose_config\n"
        "config = compose_config(['profile=cpu-smoke'])\n"
        "environment.apply_environment(environment.runtime_env_vars(config))\n"
        "ray_start.ray_init_kwargs(config), ray_start.task_runner_options(config)\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in ('verl', 'vllm', 'tensordict')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"
