"""verl's runtime environment for a PPO run's Ray workers, `verl.trainer.constants_ppo.get_ppo_ray_runtime_env` of
verl 0.9.1, written out so that the launcher starts Ray without importing verl (and with it torch).

verl's function reads the machine in three cases medplay does not run: GB200's NCCL switch (`TLLM_DISABLE_NVLS_MNNVL=1`
on a card of compute capability 10 or more), a ROCm build of torch, and the Megatron engine on Hopper or Ampere. There
the launcher calls verl's own function, importing verl as it did before. tests/launcher/test_ray_start.py checks the
copy against verl's function for several configs and driver environments, and its constants and source against
verl's, so that a verl release that changes it fails there.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from omegaconf import DictConfig, OmegaConf
from ray._private.runtime_env.constants import RAY_JOB_CONFIG_JSON_ENV_VAR

from medical_team.run.stack import torch_version_values

log = logging.getLogger(__name__)

# verl's PPO_RAY_RUNTIME_ENV variables: each given to the workers unless the driver's environment sets it.
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
# Forwarded from the driver when verl's function runs: "0" when unset; and only when set (an empty value breaks vLLM).
FORWARDED_OR_ZERO = ("VERL_FULL_DETERMINISM", "VLLM_BATCH_INVARIANT", "VERL_RL_INSIGHT_ENABLE")
FORWARDED_WHEN_SET = (
    "PYTHONHASHSEED",
    "CUBLAS_WORKSPACE_CONFIG",
    "FLASH_ATTENTION_DETERMINISTIC",
    "NCCL_DETERMINISTIC",
    "NCCL_ALGO",
)
# The torch profiler's workers get NVTX injection off (an unloadable path) unless the driver keeps it.
NVTX_INJECTION_ENV = "NVTX_INJECTION64_PATH"
NVTX_INJECTION_DISABLED = "/nonexistent/verl-disabled-nvtx-injection.so"
KEEP_NVTX_INJECTION_ENV = "VERL_KEEP_NVTX_INJECTION"
# The cases in which verl's function depends on the accelerator (see above).
GB200_SWITCH_ENV = "TLLM_DISABLE_NVLS_MNNVL"
MEGATRON_STRATEGY_KEYS = ("actor_rollout_ref.actor.strategy", "critic.strategy")


def reads_the_machine(config: DictConfig) -> bool:
    """True when verl's runtime environment for `config` depends on this machine's accelerator or torch build."""
    return (
        os.environ.get(GB200_SWITCH_ENV, "0") == "1"
        or torch_version_values("hip")["hip"] is not None
        or any(OmegaConf.select(config, key, default=None) == "megatron" for key in MEGATRON_STRATEGY_KEYS)
    )


def ppo_runtime_env(config: DictConfig) -> dict[str, Any]:
    """verl's runtime environment for the workers of a PPO run of `config`, from this driver's environment."""
    if reads_the_machine(config):
        from verl.trainer.constants_ppo import get_ppo_ray_runtime_env

        return get_ppo_ray_runtime_env(config)
    job = json.loads(os.environ.get(RAY_JOB_CONFIG_JSON_ENV_VAR, "{}"))
    working_dir = job.get("runtime_env", {}).get("working_dir", None)
    env_vars = {name: value for name, value in PPO_ENV_VARS.items() if os.environ.get(name) is None}
    keep_nvtx = os.environ.get(KEEP_NVTX_INJECTION_ENV, "0") == "1"
    if OmegaConf.select(config, "global_profiler.tool", default=None) == "torch" and not keep_nvtx:
        env_vars[NVTX_INJECTION_ENV] = NVTX_INJECTION_DISABLED
        log.warning(
            "global_profiler.tool=torch: setting %s=%s for all workers so Kineto can subscribe to "
            "CUPTI and record GPU kernels. Set VERL_KEEP_NVTX_INJECTION=1 to keep the inherited "
            "value (%s), at the cost of traces without CUDA activity.",
            NVTX_INJECTION_ENV,
            NVTX_INJECTION_DISABLED,
            os.environ.get(NVTX_INJECTION_ENV) or "unset",
        )
    env_vars.update({name: os.environ.get(name, "0") for name in FORWARDED_OR_ZERO})
    env_vars.update({name: os.environ[name] for name in FORWARDED_WHEN_SET if os.environ.get(name) is not None})
    return {"env_vars": env_vars, **({"working_dir": None} if working_dir is None else {})}
