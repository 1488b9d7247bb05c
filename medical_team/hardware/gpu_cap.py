"""`medplay.emulate_gpu_gib`: run a smaller card's profile on a bigger GPU, capped to the smaller card's memory.

Two halves, one number. In the launcher (`card_emulation`, part of the run plan), the rollout's and the judge's vLLM memory
shares, which vLLM checks are free on the whole card at start-up, are scaled to the smaller card (a 0.35
share of 48 GiB is 0.35 × 48 / 80 of an 80 GiB card; their KV caches come in bytes from the memory plan
for the smaller card, `kv_caches.kv_cache_sizes`), and the cap's fraction travels to every
Ray worker in `MEDPLAY_GPU_MEMORY_FRACTION`. In each worker (`cap_this_worker`, run when verl imports medplay's
plugin through `VERL_USE_EXTERNAL_MODULES`), a Ray actor that holds a GPU (the trainer's FSDP workers)
caps torch's caching allocator with `torch.cuda.set_per_process_memory_fraction`, so an allocation
past the smaller card's size fails with torch's own out-of-memory error, as it would there.
"""

from __future__ import annotations

import os
from typing import Any

from omegaconf import DictConfig

from medical_team.errors import UserInputError

FRACTION_ENV = "MEDPLAY_GPU_MEMORY_FRACTION"
_GIB = 2**30


def card_total_gib() -> float | None:
    """The first GPU's memory in GiB from NVML (no CUDA context in the launcher), or None without one."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        try:
            return pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(0)).total / _GIB
        finally:
            pynvml.nvmlShutdown()
    except pynvml.NVMLError:
        return None


ROLLOUT_SHARE_KEY = "actor_rollout_ref.rollout.gpu_memory_utilization"
JUDGE_SHARE_KEY = "medplay.judge.serve.gpu_memory_utilization"
FRACTION_KEY = f"ray_kwargs.ray_init.runtime_env.env_vars.{FRACTION_ENV}"


def card_emulation(config: DictConfig, total_gib: float | None = None) -> tuple[dict[str, Any], str | None]:
    """What `medplay.emulate_gpu_gib` changes in the config (vLLM shares, workers' cap), and a console line or None."""
    emulated = config.medplay.emulate_gpu_gib
    if emulated is None:
        return {}, None
    if str(config.trainer.get("device", "cuda")) == "cpu":
        return {}, f"medplay.emulate_gpu_gib={emulated} has no effect on the CPU"
    total = total_gib if total_gib is not None else card_total_gib()
    if total is None:
        raise UserInputError("needs an NVIDIA GPU that NVML can read (nvidia-ml-py)", field="medplay.emulate_gpu_gib")
    if emulated >= total:
        raise UserInputError(
            f"{emulated} GiB is not smaller than this GPU's {total:.1f} GiB", field="medplay.emulate_gpu_gib"
        )
    fraction = emulated / total
    changes = {
        ROLLOUT_SHARE_KEY: round(config.actor_rollout_ref.rollout.gpu_memory_utilization * fraction, 4),
        JUDGE_SHARE_KEY: round(config.medplay.judge.serve.gpu_memory_utilization * fraction, 4),
        FRACTION_KEY: f"{fraction:.6f}",
    }
    return changes, (
        f"emulating a {emulated:g} GiB card on this {total:.1f} GiB GPU: workers capped at {fraction:.3f} of it, "
        f"rollout vLLM share {changes[ROLLOUT_SHARE_KEY]}, judge vLLM share {changes[JUDGE_SHARE_KEY]}"
    )


def cap_this_worker() -> float | None:
    """In a Ray actor that holds a GPU, cap torch's allocator at $MEDPLAY_GPU_MEMORY_FRACTION; the fraction set."""
    value = os.environ.get(FRACTION_ENV)
    if not value:
        return None
    import ray

    if not ray.is_initialized() or not ray.get_runtime_context().get_accelerator_ids().get("GPU"):
        return None  # the driver, the task runner, agent-loop workers: no GPU of their own
    import torch

    if not torch.cuda.is_available():
        return None
    fraction = float(value)
    torch.cuda.set_per_process_memory_fraction(fraction)
    return fraction
