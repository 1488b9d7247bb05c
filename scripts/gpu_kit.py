"""The Python side of scripts/gpu_kit.sh: the prepare and training phases (fit, fit48, fit24, bench), and games.

A phase writes summary.json and prints its table last; `games LADDER_DIR` prints the steps and games a learning
ladder's RL rungs trained (the kit's learn phase ends its note with it).

    .venv/bin/python scripts/gpu_kit.py --help     # and PHASE --help; scripts/gpu_kit.sh calls it (docs/wheelhouse.md)

Every run is `medplay train` in its own process group under the phase's time limit: at the limit less
the stop grace its launcher gets SIGTERM (it saves and stops within `medplay.stop_grace_s`), and
what is still running 15 s after the grace is killed, so a phase always ends by itself. While it
runs, memory is sampled every 0.5 s (nvidia-smi on a GPU, the process tree's resident memory on the
CPU), and every 5 s each part of the run (medical_team/run/processes.py: the launcher, Ray's daemons, the task
runner, the FSDP workers, vLLM's server, engine core and worker, the agent-loop workers, the judge, ...) with its RSS,
open files and threads into processes.csv; each step's record adds the trainer's `resources/...` (host memory, the
run's three largest parts, /dev/shm, the checkpoint volume) beside verl's GPU memory figures (summary.json's
per_step). A phase leaves at most 8 files in the output folder: summary.json, the memory trace, the process
trace, and per run its console, its full log (the launcher's log file) and verl's metrics.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import psutil

from medical_team.bench.metric_medians import PHASES, summarise_metrics
from medical_team.bench.stock_step import STOCK_OVERRIDES
from medical_team.launcher.served_judge import LOG_NAME as JUDGE_LOG_NAME
from medical_team.launcher.served_judge_process import STAGE as JUDGE_STAGE
from medical_team.launcher.startup import TRAINER_READY, ready_stages
from medical_team.metrics_records import read_step_records
from medical_team.process_group import stop_process_group
from medical_team.run.processes import sample_processes

PROCESS_TRACE = "processes.csv"
PROCESS_SAMPLE_S = 5.0  # each process's RSS, files and threads: coarser than the memory trace (psutil reads /proc)
# A bigger log is cut to its end: the device tool brings back files of limited size.
MAX_LOG_BYTES = 15_000_000
STOP_GRACE_S = 30
KILL_AFTER_S = 15
# The ends of the judge server's log and of the rollout engine's lines in the full log (verl's vLLM server actor
# and its engine core).
JUDGE_LOG_LINES = 3000
ROLLOUT_LINE = re.compile(r"vLLMHttpServer|EngineCore|vllm", re.IGNORECASE)
ROLLOUT_LINES = 3000
# The phases this script runs, with their --help line (scripts/gpu_kit.sh runs the others itself).
PHASES_HERE = {
    "prepare": "MEDEC data, policy and judge in --work",
    "fit": "profile 80g judged by the prepared model (--cpu: cpu-smoke)",
    "fit48": "fit's run on this card capped to 48 GiB (profile 48g)",
    "fit24": "fit's run capped to 24 GiB (profile 24g, rules judge)",
    "bench": "the self-play step against verl's stock single-turn step (PART: one of the two runs)",
}


@dataclass(frozen=True)
class Kit:
    """Where a phase reads and writes, and on which device."""

    cpu: bool
    work: Path  # what phases leave for later ones: data, models, run folders, summaries
    out: Path  # this phase's files (at most 8)
    steps: int
    limit_s: float  # the whole phase
    extra: tuple[str, ...] = ()  # more Hydra overrides for every run

    @property
    def model(self) -> Path:
        return self.work / ("tiny-qwen3" if self.cpu else "qwen3-4b-random")

    @property
    def judge(self) -> Path:
        """The served judge: on a GPU a random model of MedGemma 4B's architecture, on the CPU the tiny policy."""
        return self.model if self.cpu else self.work / "medgemma-4b-random"


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


def medplay_command() -> str:
    """The `medplay` on PATH (a wheelhouse install's env.sh puts it there), else the one beside this Python."""
    found = shutil.which("medplay")
    return found or str(Path(sys.executable).with_name("medplay"))


# --- prepare ---------------------------------------------------------------------------------------------------


def prepare(kit: Kit) -> dict[str, Any]:
    """MEDEC data, policy and judge, built once: GPU random Qwen3-4B and MedGemma-4B shapes, CPU the tiny policy."""
    started = time.monotonic()
    data = kit.work / "data"
    if not (data / "train.parquet").is_file():
        with open(kit.out / "console.txt", "ab") as console:
            subprocess.run([medplay_command(), "convert", "--output", str(data)], check=True, stdout=console)
    if not (kit.model / "config.json").is_file():
        if kit.cpu:
            from medical_team.models.tiny import build_tiny_model

            build_tiny_model(kit.model)
        else:
            from medical_team.bench.gpu_policy import TOKENIZER_INSTALL, build_random_qwen3_4b, qwen3_tokenizer_dir

            tokenizer_dir = qwen3_tokenizer_dir()
            if tokenizer_dir is None:
                raise SystemExit(f"gpu_kit: the real Qwen3 tokenizer is not installed: {TOKENIZER_INSTALL}")
            build_random_qwen3_4b(kit.model, tokenizer_dir)
    if not (kit.judge / "config.json").is_file():
        from medical_team.models import gemma3
        from medical_team.models.gemma3_tokenizer import judge_tokenizer

        tokenizer = judge_tokenizer(kit.work / "scratch")
        gemma3.build_random_judge(kit.judge, tokenizer, gemma3.judge_config(tokenizer), "cuda", "bfloat16")
    return {
        "data": str(data),
        "model": str(kit.model),
        "judge": str(kit.judge),
        "prepare_s": round(time.monotonic() - started, 1),
    }


# --- training runs ---------------------------------------------------------------------------------------------


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


class MemoryTrace:
    """Samples memory every 0.5 s into a CSV: nvidia-smi's used MiB on a GPU, else the run's process tree RSS; and
    each part of the run every 5 s into `processes` (time, run, part, processes, RSS MiB, open files, threads)."""

    def __init__(self, path: Path, cpu: bool, processes: Path) -> None:
        self.path, self.cpu, self.processes = path, cpu, processes
        self.peak_mib = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._parts_thread: threading.Thread | None = None
        self._smi: subprocess.Popen[bytes] | None = None
        self.watched: psutil.Process | None = None
        self.run_name = ""

    def __enter__(self) -> Self:
        self._parts_thread = threading.Thread(target=self._sample_parts, daemon=True)
        self._parts_thread.start()
        if self.cpu:
            self._thread = threading.Thread(target=self._sample_tree, daemon=True)
            self._thread.start()
        else:
            with open(self.path, "ab") as sink:
                self._smi = subprocess.Popen(
                    ["nvidia-smi", "--query-gpu=timestamp,memory.used,memory.total,utilization.gpu",
                     "--format=csv,noheader,nounits", "-lms", "500"],
                    stdout=sink,
                )  # fmt: skip
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in (self._thread, self._parts_thread):
            if thread is not None:
                thread.join()
        if self._smi is not None:
            self._smi.terminate()
            self._smi.wait()
            for line in self.path.read_text().splitlines():
                fields = [part.strip() for part in line.split(",")]
                if len(fields) >= 3 and fields[1].replace(".", "").isdigit():
                    self.peak_mib = max(self.peak_mib, float(fields[1]))

    def _sample_tree(self) -> None:
        with open(self.path, "a") as sink:
            while not self._stop.wait(0.5):
                if self.watched is None:
                    continue
                total = 0
                try:
                    members = [self.watched, *self.watched.children(recursive=True)]
                except psutil.Error:
                    continue
                for member in members:
                    try:
                        total += member.memory_info().rss
                    except psutil.Error:
                        continue
                mib = total / 2**20
                self.peak_mib = max(self.peak_mib, mib)
                sink.write(f"{time.strftime('%Y/%m/%d %H:%M:%S')}, {mib:.0f}, rss\n")

    def _sample_parts(self) -> None:
        with open(self.processes, "a") as sink:
            sink.write("time,run,part,processes,rss_mib,open_files,threads\n")
            while not self._stop.wait(PROCESS_SAMPLE_S):
                if self.watched is None:
                    continue
                samples = sample_processes([self.watched.pid])
                stamp = time.strftime("%Y/%m/%d %H:%M:%S")
                rows = []
                for kind in sorted({sample.kind for sample in samples}):
                    part = [sample for sample in samples if sample.kind == kind]
                    rss = sum(sample.rss_mib for sample in part)
                    files, threads = sum(sample.open_files for sample in part), sum(sample.threads for sample in part)
                    rows.append(f"{stamp},{self.run_name},{kind},{len(part)},{rss:.1f},{files},{threads}\n")
                sink.writelines(rows)
                sink.flush()


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


# --- the table -------------------------------------------------------------------------------------------------


def table(summary: dict[str, Any]) -> str:
    """A short table of the phase: one line per run, and the ratio for bench."""
    head = (
        f"gpu_kit {summary['phase']}{' (cpu)' if summary['cpu'] else ''}: exit {summary['exit_status']}, "
        f"{summary['wall_s']:.0f} s, files in {summary['out']}"
    )
    runs = summary.get("runs", {})
    columns = f"{'run':<16} {'exit':>4} {'wall s':>7} {'startup s':>9} {'steps':>5} {'step s':>7} {'peak GiB':>8} {'limit':>5}"
    lines = [head, columns] if runs else [head]
    for name, run in runs.items():
        figures = run.get("figures") or {}
        startup = run.get("startup_s")
        peak = figures.get("peak_device_memory_reserved_gib")
        cells = [
            f"{name:<16}",
            f"{run['exit_status']!s:>4}",
            f"{run['wall_s']!s:>7}",
            f"{startup if startup is None else round(startup)!s:>9}",
            f"{figures.get('steps_logged', 0)!s:>5}",
            f"{'-' if figures.get('step_s') is None else round(figures['step_s'], 1)!s:>7}",
            f"{'-' if peak is None else round(peak, 2)!s:>8}",
            f"{'yes' if run['stopped_at_limit'] else 'no':>5}",
        ]
        lines.append(" ".join(cells))
    if "peak_memory_mib" in summary:
        lines.append(f"peak memory ({summary['memory_trace']}): {summary['peak_memory_mib']} MiB")
    if summary.get("ratio_selfplay_over_stock") is not None:
        lines.append(f"self-play step / stock step: {summary['ratio_selfplay_over_stock']}")
    return "\n".join(lines)


def games_trained(ladder_dir: Path) -> str:
    """One line per RL rung of a ladder folder: the steps logged and the games trained on (verl's metrics)."""
    lines = []
    for rung in ("rl", "selfplay"):
        metrics = ladder_dir / rung / "checkpoints" / "metrics.jsonl"
        if metrics.is_file():
            steps = read_step_records(metrics).steps
            trained = [step for step in steps if step > 0]  # step 0: the validation before the first step
            games = sum(int(steps[step].get("game/games", 0)) for step in trained)
            lines.append(f"{rung}: {len(trained)} steps, {games} games trained on")
    return "; ".join(lines) or "no RL rung logged a step"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The phase and its options, or `games LADDER_DIR`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="phase", required=True, metavar="PHASE")
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--cpu", action="store_true", help="the tiny model and profile cpu-smoke")
    options.add_argument("--work", type=Path, required=True, help="what phases leave for later ones")
    options.add_argument("--out", type=Path, required=True, help="this phase's files (at most 8)")
    options.add_argument("--steps", type=int, default=3, help="training steps per run")
    options.add_argument("--limit-s", type=float, default=540, help="the whole phase's time limit")
    options.add_argument("--extra", default="", help="more Hydra overrides, space-separated")
    for phase, summary in PHASES_HERE.items():
        command = commands.add_parser(phase, parents=[options], help=summary, description=summary)
        if phase == "bench":
            command.add_argument("part", nargs="?", choices=["selfplay", "stock"], help="one of its two runs")
        else:
            command.set_defaults(part=None)
    what = "print the steps and games trained by a learning ladder's RL rungs (the learn phase's summary note)"
    games = commands.add_parser("games", help=what, description=what)
    games.add_argument("ladder_dir", type=Path, metavar="LADDER_DIR", help="the ladder's folder (LADDER_DIR)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run one Python phase and write summary.json, printing the table last; or print `games`' line."""
    args = parse_args(argv)
    if args.phase == "games":
        print(games_trained(args.ladder_dir))
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    kit = Kit(args.cpu, args.work.resolve(), args.out.resolve(), args.steps, args.limit_s, tuple(args.extra.split()))
    started = time.monotonic()
    summary: dict[str, Any] = {"phase": args.phase, "cpu": args.cpu, "out": str(kit.out), "limit_s": kit.limit_s}
    try:
        if args.phase == "prepare":
            summary.update(prepare(kit))
            status = 0
        else:
            if not (kit.model / "config.json").is_file():
                raise SystemExit(f"gpu_kit: {kit.model} is missing: run the prepare phase first")
            summary.update(training_phase(kit, args.phase, args.part))
            statuses = [run["exit_status"] for run in summary["runs"].values()]
            status = next((code for code in statuses if code != 0), 0)
    except (Exception, SystemExit) as error:  # noqa: BLE001 - whatever failed, the phase answers with its summary
        summary["error"] = f"{type(error).__name__}: {error}"
        status = 1
    summary["exit_status"] = status
    summary["wall_s"] = round(time.monotonic() - started, 1)
    (kit.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(table(summary))
    return 0 if status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
