"""`medplay probe`: measure the host, choose the hardware profile, print a table and write probe.json.

Exit status: 0 when the host can train the chosen profile, 3 when it cannot (each reason printed), 2 for usage errors.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.table import Table

    from medical_team.probe import PackageFacts, ProbeReport

REFUSED = 3


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
        ("one checkpoint needs", _gib(report.checkpoint_gib)),
        ("verdict", "[green]can train[/green]" if report.ok else "[red]cannot train[/red]"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def run(args: argparse.Namespace) -> int:
    """Probe the host, print the table and the verdict, write the JSON report."""
    from rich.console import Console

    from medical_team.probe import assess, collect_facts

    checkpoints = Path(args.checkpoints or os.environ.get("MEDPLAY_CHECKPOINTS") or ".")
    report = assess(collect_facts(checkpoints), args.profile, args.checkpoint_gib, args.attention)
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)  # logs and pipes: one line per row
    console.print(render(report))
    # Message lines are never wrapped: a long path must not split a sentence that logs and tests search for.
    for note in report.notes:
        console.print(note, soft_wrap=True)
    for reason in report.refusals:
        console.print(f"[red]cannot train:[/red] {reason}", highlight=False, soft_wrap=True)
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report.to_json_dict(), indent=2) + "\n")
    console.print(f"profile: {report.profile}; report written to {output}", soft_wrap=True)
    return 0 if report.ok else REFUSED


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay probe`."""
    from medical_team.probe import FLASH_ATTENTION, PROFILES

    parser = subparsers.add_parser("probe", help="check the GPU, driver, disk and memory; choose a hardware profile")
    parser.add_argument("--output", default="probe.json", help="where to write the JSON report (default: probe.json)")
    parser.add_argument("--profile", choices=sorted(PROFILES), help="use this profile instead of the one the VRAM fits")
    parser.add_argument(
        "--checkpoints",
        help="checkpoints folder whose free disk is checked (default: $MEDPLAY_CHECKPOINTS, the image's volume; else .)",
    )
    parser.add_argument(
        "--checkpoint-gib", type=float, help="disk one checkpoint needs (default: the profile's estimate)"
    )
    parser.add_argument(
        "--attention",
        metavar="IMPLEMENTATION",
        default=FLASH_ATTENTION,
        help="the attention the run uses (actor_rollout_ref.model.override_config.attn_implementation); "
        f"default {FLASH_ATTENTION}, the only one that needs flash-attn (sdpa, eager: none)",
    )
    parser.set_defaults(run=run)
