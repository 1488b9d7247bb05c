"""The launcher starts Ray with exactly the arguments verl's own `run_ppo` would pass to `ray.init`, without verl.

verl's real `run_ppo` runs up to its `ray.init` call, which records its arguments and stops it; the launcher's
`ray_init_kwargs` (verl's runtime environment written out: medical_team/launcher/ppo_runtime_env.py) must give the
same, with the driver's environment of each case below. The copy's constants are verl's, and verl's module is the
one it was written from (its syntax tree's digest): if a verl release changes how it starts Ray, this fails.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import os
from typing import Any

import pytest
import ray
from ray._private.runtime_env import constants as ray_constants
from verl.trainer import constants_ppo
from verl.trainer.main_ppo import TaskRunnerV1, run_ppo

from medical_team.launcher import ppo_runtime_env
from medical_team.launcher.config.compose import compose_config
from medical_team.launcher.ray_start import prepare_driver_environment, ray_init_kwargs

# What run_ppo may export in the driver before ray.init.
DRIVER_VARIABLES = ("VERL_FULL_DETERMINISM", "VLLM_BATCH_INVARIANT", "PYTHONHASHSEED", "VERL_RL_INSIGHT_ENABLE")
# What the cases below set in the driver's environment (each removed first).
CASE_VARIABLES = (
    "NCCL_DEBUG",
    "NCCL_ALGO",
    "CUBLAS_WORKSPACE_CONFIG",
    "VERL_KEEP_NVTX_INJECTION",
    ppo_runtime_env.GB200_SWITCH_ENV,
    ray_constants.RAY_JOB_CONFIG_JSON_ENV_VAR,
)
# sha256 of verl 0.9.1's verl/trainer/constants_ppo.py as a syntax tree (comments aside): ppo_runtime_env.py's source.
CONSTANTS_PPO_DIGEST = "8c006f2d36e749f5fe45ccdd63e6bb3b2b5a6dcc9c6762e3014c2dbae360640e"


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


def syntax_digest(source: str) -> str:
    """sha256 of a module's syntax tree: the same for a source that differs in comments or layout only."""
    return hashlib.sha256(ast.dump(ast.parse(source)).encode()).hexdigest()


@pytest.mark.parametrize(
    ("overrides", "driver_env"),
    [
        (["profile=cpu-smoke"], {}),
        (["profile=80g", "actor_rollout_ref.rollout.full_determinism=true", "trainer.logger=[console,rl_insight]"], {}),
        # a variable of verl's own the driver sets (kept), two forwarded ones, the torch profiler's NVTX switch
        (
            ["profile=80g", "global_profiler.tool=torch"],
            {"NCCL_DEBUG": "INFO", "NCCL_ALGO": "Ring", "CUBLAS_WORKSPACE_CONFIG": ":4096:8"},
        ),
        (["profile=80g", "global_profiler.tool=torch"], {"VERL_KEEP_NVTX_INJECTION": "1"}),
        (
            ["profile=cpu-smoke"],
            {ray_constants.RAY_JOB_CONFIG_JSON_ENV_VAR: '{"runtime_env": {"working_dir": "/job"}}'},
        ),
        # the cases that read the machine: verl's own function answers
        (["profile=80g"], {ppo_runtime_env.GB200_SWITCH_ENV: "1"}),
        (["profile=80g", "actor_rollout_ref.actor.strategy=megatron"], {}),
    ],
    ids=[
        "cpu-smoke",
        "80g-deterministic",
        "80g-torch-profiler-driver-env",
        "80g-torch-profiler-keeps-nvtx",
        "cpu-smoke-submitted-job",
        "80g-gb200-switch",
        "80g-megatron",
    ],
)
def test_ray_is_started_with_verls_own_arguments(
    overrides: list[str], driver_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (*DRIVER_VARIABLES, *CASE_VARIABLES):  # set, then removed: monkeypatch restores the original state
        monkeypatch.setenv(name, "")
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


def test_only_the_machine_dependent_cases_call_verls_own_function(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ppo_runtime_env.GB200_SWITCH_ENV, raising=False)
    assert not ppo_runtime_env.reads_the_machine(compose_config(["profile=80g"]))
    assert not ppo_runtime_env.reads_the_machine(compose_config(["profile=cpu-smoke"]))
    assert ppo_runtime_env.reads_the_machine(compose_config(["profile=80g", "critic.strategy=megatron"]))
    monkeypatch.setenv(ppo_runtime_env.GB200_SWITCH_ENV, "1")
    assert ppo_runtime_env.reads_the_machine(compose_config(["profile=80g"]))


def test_the_written_out_runtime_env_has_verls_constants() -> None:
    """The variables, the NVTX switch and the job's config variable are verl's (less what it adds on GB200 or ROCm,
    the machine-dependent cases the copy leaves to verl)."""
    machine_dependent = {**constants_ppo._gb200_nccl_env, **constants_ppo._rocm_ray_env}
    verls_own = {k: v for k, v in constants_ppo.PPO_RAY_RUNTIME_ENV["env_vars"].items() if k not in machine_dependent}
    assert ppo_runtime_env.PPO_ENV_VARS == verls_own
    assert ppo_runtime_env.NVTX_INJECTION_ENV == constants_ppo.NVTX_INJECTION_ENV
    assert ppo_runtime_env.NVTX_INJECTION_DISABLED == constants_ppo._NVTX_INJECTION_DISABLED
    assert ppo_runtime_env.RAY_JOB_CONFIG_JSON_ENV_VAR == constants_ppo.RAY_JOB_CONFIG_JSON_ENV_VAR
    source = inspect.getsource(constants_ppo.get_ppo_ray_runtime_env)
    for names in (ppo_runtime_env.FORWARDED_OR_ZERO, ppo_runtime_env.FORWARDED_WHEN_SET):
        assert all(f'"{name}"' in source for name in names)


def test_verls_runtime_env_module_is_the_one_the_copy_was_written_from() -> None:
    """A verl release that changes constants_ppo.py in any way but its comments: compare `get_ppo_ray_runtime_env`
    with medical_team/launcher/ppo_runtime_env.py, port what changed, then update the digest."""
    assert syntax_digest(inspect.getsource(constants_ppo)) == CONSTANTS_PPO_DIGEST
