"""`medplay probe`: measure the host, choose the hardware profile, print a table and write probe.json.

`medplay probe --plan [profile=NAME] [--gpus N] [overrides]` writes only the memory plan of the composed config on
this host's GPUs, or N of them (plan.json; probe_plan.py).
`--run-overrides FILE` also writes the overrides the run trains with (the container's pipeline passes them on).
Exit status: 0 when the host can train the chosen profile (the plan fits), 3 when it cannot (each reason printed),
2 for usage errors.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from medical_team.cli.probe_plan import REFUSED
from medical_team.cli.train import add_config_argument, user_overrides
from medical_team.hardware.attention import ATTENTION_KEY, FLASH_ATTENTION, NO_PADDING_REMOVAL, attention_overrides
from medical_team.launcher.plan.host_plan import checked_config, requested_profile, run_overrides, sets_key

if TYPE_CHECKING:
    from omegaconf import DictConfig
    from rich.table import Table

    from medical_team.hardware.host_facts import PackageFacts
    from medical_team.hardware.probe import ProbeReport
    from medical_team.launcher.plan.host_plan import HostPlan


def _gib(value: float | None) -> str:
    """A GiB figure for the table."""
    return "-" if value is None else f"{value:.1f} GiB"


def _package(package: PackageFacts) -> str:
    """`yes (2.8.3)` or `no (error)` for an import check."""
    return f"yes ({package.version})" if package.importable else f"no ({package.error})"


def render(report: ProbeReport) -> Table:
    """The report as a two-column rich table."""
    from rich.table import Table

    facts = report.facts
    table = Table(title="medplay probe", show_header=True, header_style="bold")
    table.add_column("check")
    table.add_column("found")
    rows: list[tuple[str, str]] = [
        ("NVIDIA driver", f"{facts.driver_version or 'none'} (supports CUDA {facts.driver_cuda or '-'})"),
        ("torch", f"{facts.torch_version} (built for CUDA {facts.torch_cuda or '- (CPU build)'})"),
        ("torch arch list", ", ".join(facts.torch_arch_list) or "-"),
    ]
    if not facts.gpus:
        rows.append(("GPU", "no GPU found"))
    for gpu in facts.gpus:
        arch = {True: "in torch build", False: "NOT in torch build", None: "unknown"}[gpu.arch_in_torch_build]
        rows += [
            (f"GPU {gpu.index}", gpu.name),
            (f"GPU {gpu.index} compute capability", f"{gpu.compute_capability} ({arch})"),
            (f"GPU {gpu.index} VRAM total / free", f"{_gib(gpu.total_vram_gib)} / {_gib(gpu.free_vram_gib)}"),
            (f"GPU {gpu.index} bf16", {True: "yes", False: "no", None: "unknown"}[gpu.bf16]),
        ]
    rows += [
        ("NCCL", facts.nccl_version or "not available"),
        ("flash-attn importable", _package(facts.flash_attn)),
        ("vLLM importable", _package(facts.vllm)),
        ("/dev/shm", _gib(facts.shm_total_gib)),
        ("free disk for checkpoints", f"{_gib(facts.checkpoints_free_gib)} under {facts.checkpoints_dir}"),
        ("free disk for compilation caches", f"{_gib(facts.cache_free_gib)} under {facts.cache_dir}"),
        ("CPUs", str(facts.cpu_count)),
        ("RAM total / available", f"{_gib(facts.ram_total_gib)} / {_gib(facts.ram_available_gib)}"),
        ("attention", report.attention),
        ("profile", f"{report.profile} ({report.profile_source})"),
        ("one checkpoint needs", "-" if report.checkpoint_gib is None else f"{report.checkpoint_gib:.2f} GiB"),
        ("verdict", "[green]can train[/green]" if report.ok else "[red]cannot train[/red]"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def run_attention(overrides: list[str], host_attention: str) -> tuple[str, list[str]]:
    """The attention the run uses, and the overrides it adds for it.

    An attention the overrides name wins and adds nothing; otherwise the host's (--attention: the image's
    MEDPLAY_ATTENTION in the container), which, unless it is flash_attention_2, adds its implementation and turns
    padding removal off.
    """
    named = [item.split("=", 1)[1] for item in overrides if sets_key(ATTENTION_KEY, item)]
    if named:
        return named[-1], []
    return host_attention, attention_overrides(host_attention)


def run(args: argparse.Namespace) -> int:
    """Probe the host, print the table and the verdict, write the JSON report."""
    from rich.console import Console

    from medical_team.caches.cache_folder import cache_dir
    from medical_team.common.errors import UserInputError
    from medical_team.hardware.host_facts import collect_facts, with_cache_folder
    from medical_team.hardware.probe import assess, chosen_profile
    from medical_team.hardware.profiles import hardware_profiles
    from medical_team.launcher.config.compose import named_keys
    from medical_team.launcher.plan.disk_plan import config_checkpoint_parts
    from medical_team.launcher.plan.host_plan import host_plan, planned_gpus
    from medical_team.models.shape import GIB

    console = Console()
    if not console.is_terminal:
        console = Console(width=160)  # logs and pipes: one line per row
    overrides = user_overrides(args, args.overrides)
    attention, attention_overrides = run_attention(overrides, args.attention)
    if attention_overrides:
        console.print(
            f"--attention {attention} and the overrides name no attention: the run uses {attention} attention "
            f"without padding removal ({' '.join(attention_overrides)})",
            soft_wrap=True,
            highlight=False,
        )
    overrides = [*attention_overrides, *overrides]  # checked and planned as the run will train
    if args.plan:
        from medical_team.cli.probe_plan import run_plan

        return run_plan(args, overrides)
    if args.gpus is not None:
        raise UserInputError("--gpus plans for that many GPUs: it goes with --plan", field="--gpus")
    profiles = hardware_profiles()
    requested = requested_profile(overrides, args.profile)
    if requested is not None and requested not in profiles:
        raise UserInputError(f"no profile {requested!r} (profiles: {', '.join(profiles)})", field="profile")
    checkpoints = Path(args.checkpoints or os.environ.get("MEDPLAY_CHECKPOINTS") or ".")
    facts = collect_facts(checkpoints)
    chosen = chosen_profile(facts, requested)
    profile = profiles.get(chosen or "")
    on_gpu = profile is not None and profile.needs_gpu and bool(facts.gpus)
    planned, cache_setting, checkpoint_gib, config = None, None, args.checkpoint_gib, None
    if profile is not None:
        # The settings' mistakes before any work, on a GPU or not; one checkpoint of them; on a GPU, their plan on
        # the host's GPUs (the policy's and the judge's, as `medplay train` places them).
        config, settings = checked_config(profile.name, overrides)
        cache_setting = settings.cache_dir
        if checkpoint_gib is None:
            checkpoint_gib = sum(config_checkpoint_parts(config).values()) / GIB
        if on_gpu:
            gpus, _ = planned_gpus(None, args.vram_gib, facts.gpus, ("", profile.card_gib))
            planned = host_plan(config, settings, gpus, named_keys(overrides))
    facts = with_cache_folder(facts, cache_dir(cache_setting))
    plan, gpus_used = (None, None) if planned is None else (planned.plan, planned.to_json_dict())
    report = assess(facts, requested, checkpoint_gib, attention, plan, gpus_used)
    console.print(render(report))
    # Message lines are never wrapped: a long path must not split a sentence that logs and tests search for.
    for note in report.notes:
        console.print(note, soft_wrap=True)
    for reason in report.refusals:
        console.print(f"[red]cannot train:[/red] {reason}", highlight=False, soft_wrap=True)
    output = Path(args.output or "probe.json")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report.to_json_dict(), indent=2) + "\n")
    console.print(f"profile: {report.profile}; report written to {output}", soft_wrap=True)
    if args.run_overrides is not None:
        profile, *rest = run_overrides(report.profile, overrides)  # the profile first: the pipeline reads it there
        head_gpus = ray_head_gpus(planned) if on_gpu else fake_gpus(config)
        trains_with = [profile, *head_gpus, *rest]
        write_run_overrides(Path(args.run_overrides), trains_with if report.ok else None)
    return 0 if report.ok else REFUSED


def ray_head_gpus(planned: HostPlan | None) -> list[str]:
    """The GPUs a Ray head the container's pipeline starts declares, when the policy trains on fewer than the host
    shows (a judge on a GPU of its own): `ray_kwargs.ray_init.num_gpus=N` (what `medplay config get` hands the
    head; `medplay train` joins it and leaves them to it). Ray gives its GPU slots 0..N-1 to the first N GPUs the
    head sees, the policy's, so the judge's stays its own. The overrides that follow win."""
    from medical_team.launcher.plan.gpu_plan import RAY_GPUS_KEY

    if planned is None or planned.placed.gpus is None or planned.placed.placement is None:
        return []
    policy = planned.placed.placement.policy
    return [f"{RAY_GPUS_KEY}={policy}"] if policy < len(planned.placed.gpus.visible) else []


def fake_gpus(config: DictConfig | None) -> list[str]:
    """On the CPU, the fake GPUs a Ray head the container's pipeline starts declares: `ray_kwargs.ray_init.num_gpus=N`
    when the run trains on N ranks (`trainer.n_gpus_per_node`) and the profile declares another count (cpu-smoke: 1),
    as `medplay train`'s own private cluster would (launcher/plan/gpu_plan.py)."""
    from omegaconf import OmegaConf

    from medical_team.hardware.gpu_set import POLICY_GPUS_KEY
    from medical_team.launcher.plan.gpu_plan import RAY_GPUS_KEY

    if config is None:
        return []
    ranks, declared = OmegaConf.select(config, POLICY_GPUS_KEY), OmegaConf.select(config, RAY_GPUS_KEY)
    return [] if declared is None or int(declared) == int(ranks) else [f"{RAY_GPUS_KEY}={int(ranks)}"]


def write_run_overrides(path: Path, overrides: list[str] | None) -> None:
    """The run's overrides, one per line; none (the file removed) when the host cannot train."""
    if overrides is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{item}\n" for item in overrides))


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay probe`."""
    from medical_team.configs import available_profiles

    parser = subparsers.add_parser("probe", help="check the GPU, driver, disk and memory; choose a hardware profile")
    parser.add_argument("--output", help="where to write the JSON report (default: probe.json; with --plan: plan.json)")
    parser.add_argument("--profile", choices=available_profiles(), help="use this profile instead of the one the VRAM fits")
    parser.add_argument(
        "--plan",
        action="store_true",
        help="write only the memory plan of the composed config (profile=NAME and overrides, as `medplay train`): "
        "each phase's peak GPU memory, the share of the card and whether it stays under 90 %%",
    )
    parser.add_argument(
        "--gpus",
        type=int,
        metavar="N",
        help="with --plan: plan for N GPUs of this host's model (without a GPU: of the profile's card) instead of the "
        "GPUs this host has: which GPUs the policy and the judge get, and each GPU's memory",
    )
    parser.add_argument(
        "--vram-gib",
        type=float,
        help="plan for a card of this many GiB (default: GPU 0's; without a GPU, the profile's smallest card); "
        "medplay.emulate_gpu_gib, when set, is the card, as in `medplay train`",
    )
    parser.add_argument(
        "--checkpoints",
        help="checkpoints folder whose free disk is checked (default: $MEDPLAY_CHECKPOINTS, the image's volume; else .)",
    )
    parser.add_argument(
        "--checkpoint-gib",
        type=float,
        help="disk one checkpoint needs (default: estimated from the composed config's policy and save_contents)",
    )
    parser.add_argument(
        "--attention",
        metavar="IMPLEMENTATION",
        default=FLASH_ATTENTION,
        help=f"the attention this host provides, which the run uses unless the overrides name one ({ATTENTION_KEY}); "
        f"default {FLASH_ATTENTION}, the only one that needs flash-attn (sdpa, eager: none); any other adds "
        f"++{ATTENTION_KEY}=IMPLEMENTATION {NO_PADDING_REMOVAL} before the overrides",
    )
    parser.add_argument(
        "--run-overrides",
        metavar="FILE",
        help="also write the overrides the run trains with, one per line, when the host can train: profile= the "
        "chosen profile, the attention's settings, then the overrides (the container's pipeline passes them to "
        "`config get` and `train`)",
    )
    add_config_argument(parser)
    parser.add_argument(
        "overrides",
        nargs="*",
        metavar="OVERRIDE",
        help="profile=NAME and Hydra overrides (key=value) of the run: checked, and planned on a GPU",
    )
    parser.set_defaults(run=run)
