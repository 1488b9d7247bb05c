"""`medplay probe --plan`: the memory plan of the composed config on this host's GPUs (or `--gpus N` of them).

    medplay probe --plan [profile=NAME] [--gpus N] [--vram-gib GIB] [overrides]

What runs on each GPU (the policy's ranks, the served judge on a GPU of its own or beside the policy's first), each
GPU's busiest phase, and a policy GPU's phases as one table; plan.json holds the same. The arithmetic is the run
plan's (launcher/gpu_plan.py, hardware/gpu_layout.py), so it shows what `medplay train` would do.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from medical_team.cli.probe import REFUSED, checked_config, config_plan, requested_profile
from medical_team.redaction import redacted_overrides

if TYPE_CHECKING:
    from omegaconf import DictConfig
    from rich.table import Table

    from medical_team.hardware.gpu_layout import GpuRow
    from medical_team.hardware.host_facts import GpuFacts
    from medical_team.hardware.memory_plan import MemoryPlan
    from medical_team.launcher.gpu_plan import GpuPlan
    from medical_team.run.settings import SelfPlaySettings


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
    from medical_team.launcher.gpu_plan import gpu_plan
    from medical_team.launcher.run_plan import RunPlan, planned_config

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


def render_plan(profile: str, plan: MemoryPlan) -> Table:
    """Every phase's peak and its three largest terms."""
    from rich.table import Table

    card = f"{plan.vram_gib:.1f} GiB" if plan.judge_beside else f"each policy GPU ({plan.vram_gib:.1f} GiB)"
    table = Table(title=f"medplay memory plan: profile {profile} on {card}", header_style="bold")
    for column in ("phase", "peak GiB", "share", "largest terms (GiB)"):
        table.add_column(column)
    for phase in plan.phases:
        terms = sorted(phase.terms.items(), key=lambda item: -item[1])[:3]
        table.add_row(
            phase.name,
            f"{phase.peak_gib:.1f}",
            f"{100 * phase.peak_gib / plan.vram_gib:.0f} %",
            ", ".join(f"{name} {gib:.1f}" for name, gib in terms),
        )
    return table


def render_gpus(rows: list[GpuRow]) -> Table:
    """What runs on each GPU and its busiest phase."""
    from rich.table import Table

    table = Table(title="medplay GPUs: what runs where", header_style="bold")
    for column in ("GPU", "runs there", "busiest phase", "peak GiB", "share"):
        table.add_column(column)
    for row in rows:
        busy = row.peak_phase is not None
        table.add_row(str(row.gpu), row.runs, row.peak_phase or "-", f"{row.peak_gib:.1f}" if busy else "-",
                      f"{100 * row.fraction:.0f} %" if busy else "-")  # fmt: skip
    return table


def run_plan(args: argparse.Namespace, overrides: list[str]) -> int:
    """`--plan`: compose the config, plan it on this host's GPUs (or `--gpus N`) and write plan.json."""
    from rich.console import Console

    from medical_team.errors import UserInputError
    from medical_team.hardware.gpu_set import gpu_set
    from medical_team.hardware.host_facts import CUDA_VISIBLE_DEVICES, nvidia_smi_facts, visible_gpus
    from medical_team.hardware.profiles import hardware_profiles, profile_for_vram
    from medical_team.launcher.compose import named_keys

    profiles = hardware_profiles()
    host = visible_gpus(nvidia_smi_facts()[2], os.environ.get(CUDA_VISIBLE_DEVICES))
    chosen = gpu_set(host)
    vram = args.vram_gib if args.vram_gib is not None else (chosen.vram_gib if chosen is not None else None)
    profile = requested_profile(overrides, args.profile) or (profile_for_vram(vram) if vram else None)
    if profile is None or profile not in profiles or not profiles[profile].needs_gpu:
        gpu_profiles = ", ".join(name for name, item in profiles.items() if item.needs_gpu)
        raise UserInputError(
            f"the plan is for a GPU profile: name one with profile=NAME ({gpu_profiles})", field="profile"
        )
    card = (f"profile {profile}'s card", profiles[profile].card_gib)
    gpus, source = planned_gpus(args.gpus, args.vram_gib, host, card)
    config, settings = checked_config(profile, overrides)
    planned = host_plan(config, settings, gpus, named_keys(overrides))
    plan = planned.plan
    if plan.vram_gib != gpus[0].total_vram_gib:
        source = "medplay.emulate_gpu_gib"
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    console.print(render_plan(profile, plan))
    if planned.rows:
        console.print(render_gpus(planned.rows))
    lines = [planned.placed.line] if planned.placed.line else []
    for line in [*lines, *plan.notes, *plan.to_json_dict()["advice"]]:
        console.print(line, soft_wrap=True, highlight=False)
    output = Path(args.output or "plan.json")
    output.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "profile": profile,
        "overrides": redacted_overrides(overrides),
        "vram_source": source,
        **plan.to_json_dict(),
        "fits": planned.fits,
        "gpus": planned.to_json_dict(),
    }
    output.write_text(json.dumps(report, indent=2) + "\n")
    verdict = "fits" if planned.fits else "does NOT fit"
    console.print(
        f"profile {profile} {verdict}: peak {plan.peak.peak_gib:.1f} GiB in {plan.peak.name} = "
        f"{100 * plan.peak_fraction:.1f} % of {plan.vram_gib:.1f} GiB (bar {100 * plan.bar:.0f} %); "
        f"plan written to {output}",
        soft_wrap=True,
        highlight=False,
    )
    return 0 if planned.fits else REFUSED
