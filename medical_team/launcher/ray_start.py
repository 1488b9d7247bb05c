"""Start Ray as verl's `run_ppo` would, before the task runner starts, so that medplay's SIGTERM handler can follow it.

`ray.init` replaces the process's SIGTERM handler (exit at once). The launcher therefore starts Ray itself with the
arguments `run_ppo` would pass, installs medplay's handler, and then runs the rest of `run_ppo` (ppo_run.py). The
arguments mirror `verl.trainer.main_ppo.run_ppo` of verl 0.9.1, its runtime environment written out in
ppo_runtime_env.py so that the launcher does not import verl; tests/launcher/test_ray_start.py runs verl's own
`run_ppo` up to its `ray.init` call and checks that both agree, so a verl change is caught there.
"""

from __future__ import annotations

import os
from typing import Any

from omegaconf import DictConfig, OmegaConf

from medical_team.launcher.ppo_runtime_env import ppo_runtime_env


def prepare_driver_environment(config: DictConfig) -> None:
    """The variables `run_ppo` exports in the driver before starting Ray (verl forwards them to every worker)."""
    rollout = config.actor_rollout_ref.rollout
    reward_rollout = config.reward.reward_model.rollout
    if rollout.full_determinism or (config.reward.reward_model.enable and reward_rollout.full_determinism):
        os.environ["VERL_FULL_DETERMINISM"] = "1"
        os.environ["VLLM_BATCH_INVARIANT"] = "1"
        os.environ["PYTHONHASHSEED"] = str(rollout.seed)
    loggers = config.trainer.get("logger", [])
    if "rl_insight" in ([loggers] if isinstance(loggers, str) else loggers or []):
        os.environ["VERL_RL_INSIGHT_ENABLE"] = "1"


def ray_init_kwargs(config: DictConfig) -> dict[str, Any]:
    """The keyword arguments `run_ppo` passes to `ray.init` for this config: ray_kwargs.ray_init plus verl's runtime env."""
    default_runtime_env = ppo_runtime_env(config)
    ray_init = config.ray_kwargs.get("ray_init", {})
    if config.transfer_queue.enable:
        default_runtime_env.setdefault("env_vars", {})["TRANSFER_QUEUE_ENABLE"] = "1"
    runtime_env = OmegaConf.merge(default_runtime_env, ray_init.get("runtime_env", {}))
    return OmegaConf.to_container(OmegaConf.create({**ray_init, "runtime_env": runtime_env}))


def start_ray(config: DictConfig) -> None:
    """`run_ppo`'s start: the driver's variables, then Ray started (or joined) unless it is up already."""
    import ray

    prepare_driver_environment(config)
    if not ray.is_initialized():
        ray.init(**ray_init_kwargs(config))
