"""`medplay probe --plan`: the memory plan of the composed config on this host's GPUs (or `--gpus N` of them).

    medplay probe --plan [profile=NAME] [--gpus N] [--vram-gib GIB] [overrides]

What runs on each GPU (the policy's ranks, the served judge on a GPU of its own or beside the policy's first), each
GPU's busiest phase, and a policy GPU's phases as one table; plan.json holds the same. The arithmetic is the run
plan's (launcher/plan/host_plan.py over gpu_plan.py), so it shows what `medplay train` would do.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from medical_team.run.redaction import redacted_overrides

if TYPE_CHECKING:
    from rich.table import Table

    from medical_team.hardware.gpu_layout import GpuRow
    from medical_team.hardware.memory_plan import MemoryPlan

# Exit status of a host that cannot train the chosen profile (a plan that does not fit).
REFUSED = 3


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

    from medical_team.common.errors import UserInputError
    from medical_team.hardware.gpu_set import gpu_set
    from medical_team.hardware.host_facts import CUDA_VISIBLE_DEVICES, nvidia_smi_facts, visible_gpus
    from medical_team.hardware.profiles import hardware_profiles, profile_for_vram
    from medical_team.launcher.config.compose import named_keys
    from medical_team.launcher.plan.host_plan import checked_config, host_plan, planned_gpus, requested_profile

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
