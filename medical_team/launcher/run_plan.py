"""What `medplay train` derives before Ray starts, applied once to the composed config, which is then frozen.

The user's config says what to run; some values a run needs come from this machine and the config together:
both vLLM engines' KV caches in bytes (the memory plan, kv_caches.py), the emulated card's vLLM shares and the
workers' memory cap (card_emulation.py), the served judge's address and model folder (served_judge_plan.py), and
whether Ray starts a private cluster or joins `RAY_ADDRESS`. `derive_run_plan` computes them all from the bound
config; `planned_config` applies them to a copy and makes its `medplay:` section read-only. The launcher binds
that config once more and every later step (the judge's server, Ray, verl's workers, which receive the config
with its read-only flag) reads it; a write to `medplay:` anywhere raises.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from medical_team.compile_cache import COMPILE_CACHE_ENV, CompileCacheUse
from medical_team.judge.settings import JudgeSettings

RAY_INIT = "ray_kwargs.ray_init"


@dataclass(frozen=True)
class RunPlan:
    """The values a run derives from its composed config and this machine, and what the console says of them."""

    changes: Mapping[str, Any]  # dotted config key -> value
    lines: tuple[str, ...]
    ray_cluster: str  # the cluster Ray starts or joins, in words


def ray_cluster(environment: Mapping[str, str]) -> tuple[dict[str, Any], str]:
    """Join the cluster in RAY_ADDRESS, else always start a private one (never an unrelated local head).

    Without an address Ray joins any head started on this machine; resources (num_cpus/num_gpus) may only be
    given when starting a cluster, so they are unset when joining one.
    """
    address = environment.get("RAY_ADDRESS")
    if address:
        return {f"{RAY_INIT}.num_cpus": None, f"{RAY_INIT}.num_gpus": None}, address
    return {f"{RAY_INIT}.address": "local"}, "a new local cluster"


def derive_run_plan(
    config: DictConfig,
    judge: JudgeSettings,
    total_gib: float | None = None,
    compile_cache: CompileCacheUse | None = None,
) -> RunPlan:
    """Everything the run derives before Ray starts (`total_gib`: the card's memory; None reads it through NVML).

    `compile_cache`: the run's claim on vLLM's compile cache (`medplay train` only; a plan shown by `probe` has none).

    The KV caches are sized from the profile's shares of the (emulated) card, before the emulation scales
    those shares to this GPU: each derivation reads the composed config, none another's result.
    """
    from medical_team.launcher.card_emulation import card_emulation
    from medical_team.launcher.kv_caches import kv_cache_sizes
    from medical_team.launcher.served_judge_plan import served_judge_address

    changes: dict[str, Any] = {}
    lines = []
    for derived, line in (kv_cache_sizes(config, total_gib), card_emulation(config, total_gib)):
        changes.update(derived)
        if line is not None:
            lines.append(line)
    changes.update(served_judge_address(judge))
    if compile_cache is not None:
        changes[f"{RAY_INIT}.runtime_env.env_vars.{COMPILE_CACHE_ENV}"] = compile_cache.environment()[COMPILE_CACHE_ENV]
        lines.append(compile_cache.line)
    cluster_changes, cluster = ray_cluster(os.environ)
    changes.update(cluster_changes)
    return RunPlan(MappingProxyType(changes), tuple(lines), cluster)


def planned_config(config: DictConfig, plan: RunPlan) -> DictConfig:
    """A copy of `config` with the plan's values, its `medplay:` section read-only from here on."""
    planned = copy.deepcopy(config)
    with open_dict(planned):
        for key, value in plan.changes.items():
            OmegaConf.update(planned, key, value, force_add=True)
    OmegaConf.set_readonly(planned.medplay, True)
    return planned
