"""Start Ray as verl's `run_ppo` would, before the task runner starts, so that medplay's SIGTERM handler can follow it.

`ray.init` replaces the process's SIGTERM handler (exit at once). The launcher therefore starts Ray itself with the
arguments `run_ppo` would pass, then installs medplay's handler and starts the task runner (launch.run_verl). The
arguments mirror `verl.trainer.main_ppo.run_ppo` of verl 0.9.1 and its runtime environment
(`verl.trainer.constants_ppo.get_ppo_ray_runtime_env`), written here without importing verl: `import verl` costs
the launcher 5-7 CPU seconds before Ray can start (tensordict, torch._dynamo), and only the task runner's process
needs verl. tests/launcher/test_ray_start.py runs verl's own `run_ppo` up to its `ray.init` call and checks that
both agree for each case it names, so a verl change is caught there."""

from __future__ import annotations

import json
import os
from typing import Any

from omegaconf import DictConfig, OmegaConf

# verl's PPO_RAY_RUNTIME_ENV variables (verl/trainer/constants_ppo.py), each given to the workers unless the driver's
# environment already sets it.
PPO_ENV_VARS = {
    "TOKENIZERS_PARALLELISM": "true",
    "NCCL_DEBUG": "WARN",
    "VLLM_LOGGING_LEVEL": "WARN",
    "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "true",
    "VLLM_DISABLE_COMPILE_CACHE": "1",
    "HCCL_HOST_SOCKET_PORT_RANGE": "auto",
    "HCCL_NPU_SOCKET_PORT_RANGE": "auto",
    "HSA_NO_SCRATCH_RECLAIM": "1",
}
# Forwarded at call time, "0" when unset; and forwarded only when set (an empty value breaks vLLM's int parsing).
FORWARDED_OR_ZERO = ("VERL_FULL_DETERMINISM", "VLLM_BATCH_INVARIANT", "VERL_RL_INSIGHT_ENABLE")
FORWARDED_WHEN_SET = (
    "PYTHONHASHSEED",
    "CUBLAS_WORKSPACE_CONFIG",
    "FLASH_ATTENTION_DETERMINISTIC",
    "NCCL_DETERMINISTIC",
    "NCCL_ALGO",
)
# verl's opt-ins for hardware medplay does not run on: GB200's NCCL switch, ROCm, Megatron on Hopper or Ampere.
UNSUPPORTED_OPT_INS = ("TLLM_DISABLE_NVLS_MNNVL",)
NVTX_INJECTION_ENV = "NVTX_INJECTION64_PATH"
NVTX_INJECTION_DISABLED = "/nonexistent/verl-disabled-nvtx-injection.so"  # verl's value: injection stays a no-op
RAY_JOB_CONFIG_ENV = "RAY_JOB_CONFIG_JSON_ENV_VAR"  # ray._private.runtime_env.constants: a submitted job's config


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


def ppo_runtime_env(config: DictConfig) -> dict[str, Any]:
    """verl's runtime environment for a PPO run's workers (`get_ppo_ray_runtime_env`), from this driver's environment."""
    for name in UNSUPPORTED_OPT_INS:
        if os.environ.get(name, "0") == "1":
            raise RuntimeError(f"{name}=1 is verl's switch for GB200 nodes; medplay does not run there: unset it")
    job = json.loads(os.environ.get(RAY_JOB_CONFIG_ENV, "{}"))
    env_vars = {name: value for name, value in PPO_ENV_VARS.items() if os.environ.get(name) is None}
    if OmegaConf.select(config, "global_profiler.tool", default=None) == "torch" and (
        os.environ.get("VERL_KEEP_NVTX_INJECTION", "0") != "1"
    ):
        env_vars[NVTX_INJECTION_ENV] = NVTX_INJECTION_DISABLED  # so that the torch profiler records GPU kernels
    env_vars.update({name: os.environ.get(name, "0") for name in FORWARDED_OR_ZERO})
    env_vars.update({name: os.environ[name] for name in FORWARDED_WHEN_SET if os.environ.get(name) is not None})
    working_dir = job.get("runtime_env", {}).get("working_dir")
    return {"env_vars": env_vars, **({"working_dir": None} if working_dir is None else {})}


def ray_init_kwargs(config: DictConfig) -> dict[str, Any]:
    """The keyword arguments `run_ppo` passes to `ray.init` for this config: ray_kwargs.ray_init plus verl's runtime env."""
    default_runtime_env = ppo_runtime_env(config)
    ray_init = config.ray_kwargs.get("ray_init", {})
    if config.transfer_queue.enable:
        default_runtime_env.setdefault("env_vars", {})["TRANSFER_QUEUE_ENABLE"] = "1"
    runtime_env = OmegaConf.merge(default_runtime_env, ray_init.get("runtime_env", {}))
    return OmegaConf.to_container(OmegaConf.create({**ray_init, "runtime_env": runtime_env}))


def start_ray(config: DictConfig) -> None:
    """Start (or join) Ray exactly as `run_ppo` would; `run_ppo` then skips its own `ray.init`."""
    import ray

    prepare_driver_environment(config)
    ray.init(**ray_init_kwargs(config))


def task_runner_options(config: DictConfig) -> dict[str, Any]:
    """The Ray options `run_ppo` starts its task runner with: Nsight's runtime env when the nsys profiler has steps."""
    profiler = config.global_profiler
    if profiler.tool != "nsys" or not profiler.get("steps"):
        return {}
    import torch

    if not torch.cuda.is_available():
        return {}
    return {"runtime_env": {"nsight": OmegaConf.to_container(profiler.global_tool_config.nsys.controller_nsight_options)}}
