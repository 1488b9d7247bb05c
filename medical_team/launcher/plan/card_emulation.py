"""`medplay.emulate_gpu_gib`: run a smaller card's profile on a bigger GPU, capped to the smaller card's memory.

The launcher's half; the workers' half is medical_team/plugin/gpu_cap.py. Here (`card_emulation`, part of the run
plan), the rollout's and the judge's vLLM memory shares, which vLLM checks are free on the whole card at start-up,
are scaled to the smaller card (a 0.35 share of 48 GiB is 0.35 × 48 / 80 of an 80 GiB card; their KV caches come
in bytes from the memory plan for the smaller card, `kv_caches.kv_cache_sizes`), and the cap's fraction travels to
every Ray worker in `MEDPLAY_GPU_MEMORY_FRACTION` (medical_team/run/emulated_card.py), where each Ray actor that
holds a GPU caps torch's caching allocator with it.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig

from medical_team.common.errors import UserInputError
from medical_team.hardware.plan_inputs import JUDGE_SHARE_KEY, ROLLOUT_SHARE_KEY
from medical_team.run.emulated_card import FRACTION_ENV

FRACTION_KEY = f"ray_kwargs.ray_init.runtime_env.env_vars.{FRACTION_ENV}"


def card_emulation(
    config: DictConfig, on_cpu: bool, total_gib: float | None = None
) -> tuple[dict[str, Any], str | None]:
    """What `medplay.emulate_gpu_gib` changes in the config (vLLM shares, workers' cap), and a console line or None.

    `on_cpu`: the run plan's answer (run_plan.runs_on_cpu), the one place a run's device is read; `total_gib`: one
    of the policy's GPUs (the run plan's, from NVML; None: no GPU was found).
    """
    emulated = config.medplay.emulate_gpu_gib
    if emulated is None:
        return {}, None
    if on_cpu:
        return {}, f"medplay.emulate_gpu_gib={emulated} has no effect on the CPU"
    total = total_gib
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
