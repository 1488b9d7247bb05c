"""A run's config planned on a host's GPUs before it starts, as `medplay probe` shows it: composed and checked as
`medplay train` would, placed on the GPUs by the run plan's arithmetic (gpu_plan.py), with the memory plan of each GPU.

`medplay probe` (its report's `gpus_used`) and `medplay probe --plan` (cli/probe_plan.py) read it; nothing here
starts anything or reads the host itself: the GPUs come from the caller (host_facts.py's listings).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from medical_team.hardware.gpu_layout import GpuRow
    from medical_team.hardware.host_facts import GpuFacts
    from medical_team.hardware.memory_plan import MemoryPlan
    from medical_team.launcher.plan.gpu_plan import GpuPlan
    from medical_team.run.settings import SelfPlaySettings


def sets_key(key: str, override: str) -> bool:
    """True when `override` sets `key` (`KEY=V`, `+KEY=V`, `++KEY=V`)."""
    return "=" in override and override.split("=", 1)[0].lstrip("+") == key


def requested_profile(overrides: list[str], flag: str | None) -> str | None:
    """The profile named by a `profile=NAME` override, else by --profile (`flag`)."""
    named = [item.split("=", 1)[1] for item in overrides if sets_key("profile", item)]
    return named[-1] if named else flag


def run_overrides(profile: str, overrides: list[str]) -> list[str]:
    """What the run trains with: `profile=PROFILE`, then the overrides but their own `profile=`."""
    return [f"profile={profile}", *(item for item in overrides if not sets_key("profile", item))]


def checked_config(profile: str, overrides: list[str]) -> tuple[DictConfig, SelfPlaySettings]:
    """The config `medplay train profile=PROFILE OVERRIDES` would use and its settings, once every problem of it is
    known (all of them in one UserInputError otherwise: exit 2 before any work)."""
    from medical_team.launcher.config.compose import compose_config
    from medical_team.launcher.config.verl_keys import check_config

    config = compose_config(run_overrides(profile, overrides))
    return config, check_config(config)


def compose_plan(profile: str, overrides: list[str], vram_gib: float) -> MemoryPlan:
    """The memory plan of the config `medplay train profile=PROFILE OVERRIDES` would use, on a card of `vram_gib`."""
    # a plan only of a config `medplay train` would start with
    return config_plan(*checked_config(profile, overrides), vram_gib)


def config_plan(
    config: DictConfig, settings: SelfPlaySettings, vram_gib: float, judge_beside: bool = True
) -> MemoryPlan:
    """The memory plan of a checked config on a card of `vram_gib` GiB (a served judge on it unless `judge_beside` is
    false: a GPU of its own).

    With `medplay.emulate_gpu_gib` the card is the emulated one, as `medplay train` sizes it (run_plan.plan_card).
    """
    from medical_team.launcher.plan.memory_inputs import run_memory_plan
    from medical_team.launcher.plan.run_plan import plan_card

    emulated = settings.emulate_gpu_gib
    plan = run_memory_plan(config, settings.judge, plan_card(emulated, vram_gib), judge_beside)
    if emulated is not None:
        plan.notes.insert(0, f"card: {emulated:g} GiB (medplay.emulate_gpu_gib), not {vram_gib:.1f} GiB")
    return plan


@dataclass(frozen=True)
class HostPlan:
    """A checked config planned on a host's GPUs: where each part runs, a policy GPU's memory plan, a row per GPU."""

    placed: GpuPlan
    plan: MemoryPlan  # the busiest policy GPU's: the first one's when the judge is beside it
    rows: list[GpuRow]
    games_per_step: int

    @property
    def fits(self) -> bool:
        """Every GPU's busiest phase under the bar, and every vLLM engine holding a request."""
        return self.plan.fits and all(row.fraction <= self.plan.bar for row in self.rows)

    def to_json_dict(self) -> dict:
        """Where each part runs, as plain JSON-ready data."""
        gpus, where = self.placed.gpus, self.placed.placement
        return {
            "count": None if gpus is None else gpus.count,
            "model": None if gpus is None else gpus.name,
            "policy_gpus": None if where is None else where.policy,
            "judge_gpu": None if gpus is None or where is None or where.judge_gpu is None else gpus.gpus[where.judge_gpu].index,
            "judge_beside_policy": self.plan.judge_beside,
            "games_per_step": self.games_per_step,
            "summary": self.placed.line,
            "per_gpu": [row.to_json_dict() for row in self.rows],
        }  # fmt: skip


def host_plan(
    config: DictConfig, settings: SelfPlaySettings, gpus: Sequence[GpuFacts], named: Collection[str]
) -> HostPlan:
    """The run plan's GPUs for this config on `gpus`, and the memory plan of each (UserInputError: a GPU count the
    host does not have, or a step that does not split over the GPUs)."""
    from omegaconf import OmegaConf

    from medical_team.hardware.gpu_batches import batch_settings
    from medical_team.hardware.gpu_layout import gpu_rows
    from medical_team.launcher.plan.gpu_plan import gpu_plan
    from medical_team.launcher.plan.run_plan import RunPlan, planned_config

    served = settings.judge.kind.served_here
    container = OmegaConf.to_container(config, resolve=True)
    placed = gpu_plan(config, container, served, on_cpu=False, private_cluster=True, named=named, visible=gpus)
    # The batches as the run trains them (scaled with the GPUs): the plan's games per step.
    config = planned_config(config, RunPlan(MappingProxyType(placed.changes), (), "", on_cpu=False))
    card = placed.card_gib if placed.card_gib is not None else gpus[0].total_vram_gib
    where = placed.placement
    beside = where is None or where.judge_beside_policy or not served
    plan = config_plan(config, settings, card, judge_beside=beside)
    rows = []
    if placed.gpus is not None and where is not None:
        alone = config_plan(config, settings, card, judge_beside=False) if plan.judge_beside and served else plan
        rows = gpu_rows(placed.gpus, where, alone, plan if where.judge_beside_policy else None)
    games = batch_settings(OmegaConf.to_container(config, resolve=True)).games
    return HostPlan(placed, plan, rows, games)


def planned_gpus(
    count: int | None, vram_gib: float | None, host: Sequence[GpuFacts], card: tuple[str, float]
) -> tuple[list[GpuFacts], str]:
    """The GPUs to plan for and where their size comes from: the host's (as CUDA_VISIBLE_DEVICES leaves them), or
    `count` of the host's model (without a GPU: of `card`, the profile's), of `vram_gib` GiB when given."""
    from medical_team.hardware.gpu_set import gpu_set
    from medical_team.hardware.host_facts import GpuFacts

    chosen = gpu_set(host)
    if chosen is not None and count is None and vram_gib is None:
        return list(host), f"GPU {chosen.gpus[0].index} ({chosen.name})"
    name, vram = (chosen.name, chosen.vram_gib) if chosen is not None else card
    source = f"GPU {chosen.gpus[0].index} ({chosen.name})" if chosen is not None else card[0]
    if vram_gib is not None:
        vram, source = vram_gib, "--vram-gib"
    return [GpuFacts(index, name, "unknown", vram, None, None, None) for index in range(count or 1)], source
