"""The GPU kit's training phases (fit, fit48, fit24, bench): `medplay train` runs under the phase's time limit.

Every run is in its own process group: at the limit less the stop grace its launcher gets SIGTERM, and what is still
running 15 s after the grace is killed. What a run leaves (console, full log, metrics, the judge's and the rollout
engine's log lines) is copied into the phase's output folder, its figures into the phase's summary.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from gpu_kit_prepare import Kit, medplay_command
from gpu_kit_trace import MemoryTrace

from medical_team.bench.metric_medians import PHASES, summarise_metrics
from medical_team.bench.stock_step import STOCK_OVERRIDES
from medical_team.launcher.console.startup import TRAINER_READY, ready_stages
from medical_team.launcher.judge.served_judge import LOG_NAME as JUDGE_LOG_NAME
from medical_team.launcher.judge.served_judge_process import STAGE as JUDGE_STAGE
from medical_team.launcher.process_group import stop_process_group
from medical_team.run_folder.metrics_records import read_step_records

PROCESS_TRACE = "processes.csv"
# A bigger log is cut to its end: the device tool brings back files of limited size.
MAX_LOG_BYTES = 15_000_000
STOP_GRACE_S = 30
KILL_AFTER_S = 15
# The ends of the judge server's log and of the rollout engine's lines in the full log (verl's vLLM server actor
# and its engine core).
JUDGE_LOG_LINES = 3000
ROLLOUT_LINE = re.compile(r"vLLMHttpServer|EngineCore|vllm", re.IGNORECASE)
ROLLOUT_LINES = 3000


@dataclass
class RunRecord:
    """One `medplay train` of a phase: how it ended and what it measured."""

    name: str
    overrides: list[str]
    exit_status: int | None = None
    wall_s: float | None = None
    stopped_at_limit: bool = False
    startup_stages_s: dict[str, float] = field(default_factory=dict)
    startup_s: float | None = None  # the run's first startup line to the trainer ready (and the judge)
    figures: dict[str, Any] = field(default_factory=dict)


def common_overrides(kit: Kit, run: str, profile: str) -> list[str]:
    """What every run of the kit sets: its folder, the prepared data and model, short and unsaved, a short grace."""
    overrides = [
        f"profile={profile}",
        f"medplay.output_dir={kit.work / run}",
        f"medplay.data_dir={kit.work / 'data'}",
        f"medplay.model.path={kit.model}",
        "medplay.model.build_tiny=false",
        f"trainer.total_training_steps={kit.steps}",
        "trainer.save_freq=-1",
        "trainer.resume_mode=disable",
        "trainer.val_before_train=false",
        f"medplay.stop_grace_s={STOP_GRACE_S}",
        # Unsaved runs keep no room for a checkpoint: the GPU profiles' floor is one 4B checkpoint (60 GiB), more than
        # a lent machine's disk may have free. The memory floor stays.
        "medplay.resources.disk_floor_gib=0",
    ]
    return overrides


def model_judge(kit: Kit) -> list[str]:
    """The prepared judge served by vLLM: a random model's verdicts are ties, kept so every step trains."""
    return [
        "medplay.judge.backend=vllm",
        f"medplay.judge.model={kit.judge}",
        "medplay.judge.gold_accuracy_floor=0.0",
        "medplay.rewards.remove_ties=false",
    ]


def fit_overrides(kit: Kit, phase: str) -> list[str]:
    """fit: profile 80g judged by the model; fit48/fit24: that profile with the card capped to its size."""
    if kit.cpu:
        profile, emulated = "cpu-smoke", {"fit48": 48, "fit24": 24}.get(phase)
    else:
        profile, emulated = {"fit": ("80g", None), "fit48": ("48g", 48), "fit24": ("24g", 24)}[phase]
    overrides = common_overrides(kit, f"run-{phase}", profile)
    # 24g has no room for a local judge (its profile asks for a remote one): the rules judge there.
    overrides += ["medplay.judge.backend=rules"] if phase == "fit24" else model_judge(kit)
    if emulated is not None:
        overrides.append(f"medplay.emulate_gpu_gib={emulated}")
    return overrides


def train_run(kit: Kit, name: str, overrides: list[str], deadline: float, trace: MemoryTrace) -> RunRecord:
    """`medplay train` with these overrides until it ends or the deadline (SIGTERM, grace, then SIGKILL)."""
    record = RunRecord(name, [*overrides, *kit.extra])
    shutil.rmtree(kit.work / f"run-{name}", ignore_errors=True)
    console = kit.out / f"{name}-console.txt"
    started = time.monotonic()
    with open(console, "wb") as sink:
        child = subprocess.Popen(
            [medplay_command(), "train", *record.overrides], stdout=sink, stderr=subprocess.STDOUT,
            start_new_session=True, cwd=kit.work,
        )  # fmt: skip
        trace.watched, trace.run_name = psutil.Process(child.pid), name
        term_at = deadline - STOP_GRACE_S - KILL_AFTER_S
        try:
            record.exit_status = child.wait(timeout=max(1.0, term_at - time.monotonic()))
        except subprocess.TimeoutExpired:
            record.stopped_at_limit = True
            # The launcher alone gets SIGTERM: it asks the trainer to save and stop, and stops the rest itself.
            record.exit_status = stop_process_group(
                child, STOP_GRACE_S + KILL_AFTER_S, term_leader_only=True, kill_wait_s=None
            )
    record.wall_s = round(time.monotonic() - started, 1)
    record.startup_stages_s = ready_stages(console.read_text(errors="replace"))
    record.startup_s = startup_seconds(record.startup_stages_s)
    logs = sorted((kit.work / f"run-{name}" / "logs").glob("train-*.log"))
    if logs:
        with open(logs[-1], "rb") as handle:
            handle.seek(max(0, logs[-1].stat().st_size - MAX_LOG_BYTES))
            (kit.out / f"{name}-full.log").write_bytes(handle.read())
    metrics = kit.work / f"run-{name}" / "checkpoints" / "metrics.jsonl"
    if metrics.is_file():
        shutil.copy(metrics, kit.out / f"{name}-metrics.jsonl")
        if read_step_records(metrics).steps:  # a run stopped before its first step leaves the file empty
            record.figures = run_figures(metrics)
    judge_log = kit.work / f"run-{name}" / JUDGE_LOG_NAME
    if judge_log.is_file():
        (kit.out / f"{name}-judge.log").write_text(tail_lines(judge_log, JUDGE_LOG_LINES))
    if logs:
        rollout = [line for line in tail_lines(logs[-1], None).splitlines(keepends=True) if ROLLOUT_LINE.search(line)]
        (kit.out / f"{name}-rollout.log").write_text("".join(rollout[-ROLLOUT_LINES:]))
    return record


def tail_lines(path: Path, count: int | None) -> str:
    """The last `count` lines of a text file (all of them with None), undecodable bytes replaced."""
    lines = path.read_text(errors="replace").splitlines(keepends=True)
    return "".join(lines if count is None else lines[-count:])


def startup_seconds(stages: dict[str, float]) -> float | None:
    """Seconds from `medplay train`'s start until both the trainer and the judge's server (if any) were ready.

    `stages`: the console's ready lines (`ready_stages`). The trainer's counts from the launcher's start; the
    judge's server starts at the same time.
    """
    if TRAINER_READY not in stages:
        return None
    return max(stages[TRAINER_READY], stages.get(JUDGE_STAGE, 0.0))


def run_figures(metrics: Path) -> dict[str, Any]:
    """Medians after the first step (warm-up), and per step the phase times and the memory figures verl logged."""
    figures = summarise_metrics(metrics, skip_steps=1)
    per_step = []
    for step, data in read_step_records(metrics).steps.items():
        kept = {
            f"timing_s/{phase}": data[f"timing_s/{phase}"] for phase in ("step", *PHASES) if f"timing_s/{phase}" in data
        }
        kept.update(
            {
                key: value
                for key, value in data.items()
                if "memory" in key or "mfu/" in key or key.startswith("resources/")
            }
        )
        per_step.append({"step": step, **kept})
    figures["per_step"] = per_step
    return figures


def training_phase(kit: Kit, phase: str, part: str | None) -> dict[str, Any]:
    """fit / fit48 / fit24 (one run) or bench (a self-play and a stock run, or the part named)."""
    deadline = time.monotonic() + kit.limit_s
    trace_name = "memory.csv" if kit.cpu else "gpu-memory.csv"
    summary: dict[str, Any] = {}
    with MemoryTrace(kit.out / trace_name, kit.cpu, kit.out / PROCESS_TRACE) as trace:
        if phase == "bench":
            runs = bench_runs(kit, part, deadline, trace)
        else:
            runs = [train_run(kit, phase, fit_overrides(kit, phase), deadline, trace)]
    summary["runs"] = {run.name: run.__dict__ for run in runs}
    summary["peak_memory_mib"] = round(trace.peak_mib)
    summary["memory_trace"] = trace_name
    summary["process_trace"] = PROCESS_TRACE
    if phase == "bench":
        summary.update(bench_ratio(kit))
    return summary


def bench_runs(kit: Kit, part: str | None, deadline: float, trace: MemoryTrace) -> list[RunRecord]:
    """The self-play and the stock single-turn run (rules judge, same profile and model); one if `part` names it."""
    profile = "cpu-smoke" if kit.cpu else "80g"
    parts = [part] if part else ["selfplay", "stock"]
    runs = []
    for name in parts:
        overrides = common_overrides(kit, f"run-bench-{name}", profile) + ["medplay.judge.backend=rules"]
        if name == "stock":
            overrides += list(STOCK_OVERRIDES)
        run = train_run(kit, f"bench-{name}", overrides, deadline, trace)
        runs.append(run)
        (kit.work / f"bench-{name}.json").write_text(json.dumps(run.__dict__, indent=1) + "\n")
    return runs


def bench_ratio(kit: Kit) -> dict[str, Any]:
    """Self-play step ÷ stock step from the two bench runs kept in the work folder (either may be an earlier call's)."""
    steps = {}
    for name in ("selfplay", "stock"):
        kept = kit.work / f"bench-{name}.json"
        steps[name] = json.loads(kept.read_text())["figures"].get("step_s") if kept.is_file() else None
    ratio = round(steps["selfplay"] / steps["stock"], 3) if steps["selfplay"] and steps["stock"] else None
    return {"step_s_selfplay": steps["selfplay"], "step_s_stock": steps["stock"], "ratio_selfplay_over_stock": ratio}
