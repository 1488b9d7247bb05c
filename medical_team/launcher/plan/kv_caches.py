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

from omegaconf import DictConfig

from medical_team.common.errors import UserInputError
from medical_team.hardware.plan_inputs import JUDGE_KV_KEY, ROLLOUT_KV_KEY
from medical_team.judge.settings import JudgeSettings
from medical_team.launcher.plan.memory_inputs import run_memory_plan
from medical_team.models.shape import GIB


def kv_cache_sizes(config: DictConfig, judge: JudgeSettings, card_gib: float) -> tuple[dict[str, Any], str | None]:
    """Each GPU vLLM engine's KV cache in bytes from the memory plan on the run's card (run_plan.plan_card).

    The config keys to set and their values, and a line for the console (None when nothing is sized).
    """
    card = card_gib
    plan = run_memory_plan(config, judge, card)
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
