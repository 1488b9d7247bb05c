"""`medplay bench soak` (`make soak`): the real trainer on CPU for a thousand steps, SIGKILLed twice and resumed.

    medplay bench soak [--steps 1000] [--kills 2] [--seed N] [--report docs/results/soak-cpu]

Runs `medplay train profile=cpu-smoke` with checkpoints every `--save-freq` steps and `--keep` of them kept. At
`--kills` steps drawn at random (the seed is recorded), the whole process tree gets SIGKILL at once, as when a
container is killed, and the run is started again: it must resume from the newest verified checkpoint. Every
`--sample-s` seconds the run's processes are sampled by their part (medical_team/run/processes.py: RSS, open files,
threads), with `/dev/shm`, the host's available memory and the output folder's size by subfolder. At the end the
metrics file must list every step once and the checkpoint folder hold `--keep` whole checkpoints.

The report folder gets `soak.json` (every sample and step time), a PNG per series and `soak-cpu.md` beside it (one
folder up, named after the folder): per process part the RSS slope per 100 steps after warm-up (least squares within
each process's life, the runs between kills pooled), open files and threads the same way, the step time of the first
and last tenth of the steps, and the disk. Exit status 0 when the run's own checks held (resume, steps, retention);
the slopes are figures, not pass/fail.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from medical_team.bench import soak_figures
from medical_team.bench.commands import MEDPLAY
from medical_team.bench.results import machine
from medical_team.bench.table import print_result
from medical_team.reliability.checkpoints import damage, has_manifest, is_complete
from medical_team.run.processes import MIB, sample_processes
from medical_team.run.shm_segments import remove_orphaned_segments, shm_segments
from medical_team.run_folder.checkpoint_folder import read_tracker, step_dirs
from medical_team.run_folder.metrics_records import parse_record

STALL_S = 900  # no new step for this long (start-up included) ends the soak: a hang, not a slow machine


@dataclass
class Segment:
    """One start of `medplay train` until it exited or was killed."""

    started_at_step: int  # the last step logged before it started (0 at the first start)
    resumed_from: int | None = None  # the checkpoint step its console named
    expected_resume: int | None = None  # the newest verified checkpoint when the run before it was killed
    killed_after_step: int | None = None  # the step logged last when it was killed (None: it ran to its end)
    checkpoint_at_kill: int | None = None  # the newest verified checkpoint once the killed run was gone
    exit_status: int | None = None
    seconds: float = 0.0


@dataclass
class Soak:
    """What the soak saw: the samples, each step's time, the runs between kills, and the checks."""

    settings: dict[str, Any]
    samples: list[dict[str, Any]] = field(default_factory=list)
    step_seconds: dict[int, float] = field(default_factory=dict)
    step_cpu_seconds: dict[int, float] = field(default_factory=dict)  # CPU all the run's processes spent on the step
    segments: list[Segment] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)  # the soak's clock, for every sample's time


class MetricsTail:
    """Follows the metrics JSONL as it grows: the last step logged, and each step's `timing_s/step`."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.partial = path, 0, b""
        self.last_step = 0

    def poll(self, step_seconds: dict[int, float]) -> int:
        """Read what was appended since the last call; return the last step logged."""
        try:
            with self.path.open("rb") as file:
                if file.seek(0, os.SEEK_END) < self.offset:  # moved aside by a resume: read it again
                    self.offset, self.partial = 0, b""
                file.seek(self.offset)
                chunk = file.read()
        except FileNotFoundError:
            return self.last_step
        self.offset += len(chunk)
        *lines, self.partial = (self.partial + chunk).split(b"\n")
        for line in filter(None, lines):
            step, data = parse_record(line.decode(), self.path.name, 0)
            self.last_step = step
            if "timing_s/step" in data:
                step_seconds[step] = data["timing_s/step"]
        return self.last_step


def folder_mib(folder: Path) -> float:
    """The size of the files under `folder` in MiB (what they hold, not their blocks)."""
    total = 0
    for parent, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(parent, name)).st_size
            except FileNotFoundError:  # removed while walking (retention, a temporary file)
                continue
    return total / MIB


def sample(root_pid: int, output: Path, segment: int, step: int, started: float) -> dict[str, Any]:
    """One sample of the run: its processes, /dev/shm, the host's available memory, the output folder by subfolder."""
    folders = {child.name: folder_mib(child) for child in sorted(output.iterdir()) if child.is_dir()}
    return {
        "t": round(time.monotonic() - started, 2),
        "segment": segment,
        "step": step,
        "processes": [asdict(process) for process in sample_processes([root_pid])],
        "shm_mib": shutil.disk_usage("/dev/shm").used / MIB,
        "available_mib": psutil.virtual_memory().available / MIB,
        "folders_mib": folders,
    }


def kill_tree(root: subprocess.Popen[bytes]) -> None:
    """SIGKILL the run's whole tree at once (no process gets to clean up) and wait for every process to go."""
    try:
        tree = [psutil.Process(root.pid), *psutil.Process(root.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        tree = []
    for process in tree:
        try:
            process.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            continue
    root.wait(timeout=60)
    psutil.wait_procs(tree, timeout=60)


def newest_verified(checkpoints: Path) -> int | None:
    """The newest checkpoint whose files match the manifest of its marker: the one a resume must choose."""
    for step, folder in sorted(step_dirs(checkpoints).items(), reverse=True):
        if has_manifest(folder) and not damage(folder):
            return step
    return None


def train_command(args: argparse.Namespace) -> list[str]:
    """`medplay train profile=cpu-smoke` for the soak's steps, saves and retention."""
    return [
        MEDPLAY,
        "train",
        "profile=cpu-smoke",
        f"medplay.output_dir={args.work}",
        f"medplay.data_dir={args.work / 'data'}",
        f"trainer.total_training_steps={args.steps}",
        f"trainer.total_epochs={args.epochs}",
        f"trainer.save_freq={args.save_freq}",
        f"trainer.max_actor_ckpt_to_keep={args.keep}",
        *args.override,
    ]


def resumed_from(console: str) -> int | None:
    """The checkpoint step a run's console said it resumed from (`medplay: resuming from .../global_step_N`)."""
    for line in console.splitlines():
        if line.startswith("medplay: resuming from "):
            return int(line.rsplit("global_step_", 1)[1])
    return None


class StepCpu:
    """The CPU seconds a run's processes spend on each step: their CPU time read as each new step is logged."""

    def __init__(self) -> None:
        self.at_last_step: dict[int, float] | None = None  # pid -> CPU seconds when the previous step was logged

    def mark(self, root_pid: int, previous: int, step: int, step_cpu_seconds: dict[int, float]) -> None:
        """Step `step` was just logged after `previous`: record its CPU seconds when it follows a marked step.

        A process counts when it was there at both marks (one that started in between brings no start-up of its
        own); the first step logged after a start follows no mark, and neither does a step that skipped one.
        """
        now = {process.pid: process.cpu_s for process in sample_processes([root_pid])}
        if self.at_last_step is not None and step == previous + 1:
            before = self.at_last_step
            step_cpu_seconds[step] = round(sum(cpu - before[pid] for pid, cpu in now.items() if pid in before), 3)
        self.at_last_step = now


def sample_until_end(
    args: argparse.Namespace,
    soak: Soak,
    run: subprocess.Popen[bytes],
    tail: MetricsTail,
    kill_at: int | None,
    shm_before: set[Path],
) -> None:
    """Sample the run (the soak's newest segment) until it ends, stalls, or its last logged step reaches `kill_at`."""
    index, segment = len(soak.segments) - 1, soak.segments[-1]
    next_sample, last_step, last_progress = 0.0, segment.started_at_step, time.monotonic()
    step_cpu = StepCpu()
    while run.poll() is None:
        step = tail.poll(soak.step_seconds)
        if step != last_step:
            step_cpu.mark(run.pid, last_step, step, soak.step_cpu_seconds)
            last_step, last_progress = step, time.monotonic()
        if time.monotonic() >= next_sample:
            soak.samples.append(sample(run.pid, args.work, index, step, soak.started))
            next_sample = time.monotonic() + args.sample_s
        if kill_at is not None and step >= kill_at:
            segment.killed_after_step = step
            kill_tree(run)
            # read once nothing can write it any more
            segment.checkpoint_at_kill = newest_verified(args.work / "checkpoints")
            remove_orphaned_segments(shm_before)  # vLLM's shared memory, left by the killed rollout server
            break
        if time.monotonic() - last_progress > STALL_S:
            kill_tree(run)
            soak.problems.append(f"run {index}: no new step for {STALL_S} s after step {step}; killed")
            break
        time.sleep(0.5)


def run_segment(args: argparse.Namespace, soak: Soak, kill_at: int | None) -> None:
    """Start the run, sample it until it ends or its last logged step reaches `kill_at`, then SIGKILL it.

    A soak that is itself stopped (Ctrl-C, or SIGTERM: `main` turns it into an exit) SIGKILLs its run first.
    """
    tail, index = MetricsTail(args.work / "checkpoints" / "metrics.jsonl"), len(soak.segments)
    segment = Segment(started_at_step=tail.poll({}))
    if index:
        segment.expected_resume = soak.segments[-1].checkpoint_at_kill
    soak.segments.append(segment)
    console = args.work / f"console-{index}.txt"
    shm_before = shm_segments()
    began = time.monotonic()
    run: subprocess.Popen[bytes] | None = None  # started inside the try, so that a stop right after the start kills it
    try:
        with console.open("w") as out:
            run = subprocess.Popen(train_command(args), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        sample_until_end(args, soak, run, tail, kill_at, shm_before)
        segment.exit_status = run.wait()
    except BaseException:  # the soak itself interrupted (Ctrl-C, SIGTERM): its run must not train on unwatched
        if run is not None:
            kill_tree(run)
        remove_orphaned_segments(shm_before)
        raise
    segment.seconds = round(time.monotonic() - began, 1)
    tail.poll(soak.step_seconds)
    text = console.read_text()
    segment.resumed_from = resumed_from(text)
    if index and segment.resumed_from != segment.expected_resume:
        soak.problems.append(
            f"run {index} resumed from {segment.resumed_from}, not the newest verified checkpoint "
            f"{segment.expected_resume}"
        )
    if kill_at is None and segment.exit_status != 0:
        soak.problems.append(f"run {index} ended with exit status {segment.exit_status}: see {console}")


def check_end(args: argparse.Namespace, soak: Soak) -> dict[str, Any]:
    """Every step in the metrics file once; `--keep` whole checkpoints; what the output folder holds."""
    checkpoints = args.work / "checkpoints"
    lines = (checkpoints / "metrics.jsonl").read_text().splitlines()
    steps = [json.loads(line)["step"] for line in lines if line.strip()]
    if sorted(steps) != list(range(1, args.steps + 1)):
        repeated = sorted({step for step in steps if steps.count(step) > 1})
        missing = sorted(set(range(1, args.steps + 1)) - set(steps))
        soak.problems.append(f"metrics file: steps repeated {repeated[:20]}, missing {missing[:20]}")
    kept = step_dirs(checkpoints)
    tracked = read_tracker(checkpoints)
    whole = {
        step: is_complete(folder, named_by_tracker=step == tracked) and not damage(folder)
        for step, folder in kept.items()
    }
    if len(kept) != args.keep or not all(whole.values()):
        soak.problems.append(
            f"checkpoints: {len(kept)} step folders kept ({sorted(kept)}), asked {args.keep}; whole: {whole}"
        )
    return {
        "steps_logged": len(steps),
        "checkpoints_kept": sorted(kept),
        "tracker": tracked,
        "folders_mib": {child.name: round(folder_mib(child), 2) for child in args.work.iterdir() if child.is_dir()},
    }


def kill_steps(args: argparse.Namespace, rng: random.Random) -> list[int]:
    """`--kills` distinct steps between saves, at least a save interval apart, in the middle 70 % of the run."""
    low, high = max(args.save_freq + 1, int(args.steps * 0.15)), int(args.steps * 0.85)
    candidates = [step for step in range(low, high) if step % args.save_freq]
    while True:
        chosen = sorted(rng.sample(candidates, args.kills))
        if all(b - a > args.save_freq for a, b in itertools.pairwise(chosen)):
            return chosen


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`medplay bench soak`'s options."""
    parser.add_argument("--steps", type=int, default=1000, help="training steps (default 1000)")
    parser.add_argument("--kills", type=int, default=2, help="SIGKILLs of the whole run, each resumed (default 2)")
    parser.add_argument("--seed", type=int, default=None, help="the kill steps' seed (default: drawn and recorded)")
    parser.add_argument("--save-freq", type=int, default=50, help="trainer.save_freq (default 50)")
    parser.add_argument("--keep", type=int, default=2, help="trainer.max_actor_ckpt_to_keep")
    parser.add_argument("--epochs", type=int, default=100, help="trainer.total_epochs: enough for --steps")
    parser.add_argument("--sample-s", type=float, default=5.0, help="seconds between samples of the processes")
    parser.add_argument("--warmup-steps", type=int, default=150, help="steps after each start left out of slopes")
    parser.add_argument("--work", type=Path, default=Path("build/soak"), help="scratch folder (deleted first)")
    parser.add_argument(
        "--report", type=Path, default=Path("docs/results/soak-cpu"), help="folder of soak.json and PNGs; page beside"
    )
    parser.add_argument("--override", action="append", default=[], help="one more `medplay train` override")


def own_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The soak's options as JSON values (paths as text), without what `medplay` adds: its names and `run`."""
    options = {key: value for key, value in vars(args).items() if key not in ("command", "bench", "run")}
    return {key: str(value) if isinstance(value, Path) else value for key, value in options.items()}


def exit_on_sigterm(signum: int, _frame: object) -> None:
    """SIGTERM ends the soak as Ctrl-C does, through `run_segment`'s clean-up of the run it watches."""
    raise SystemExit(128 + signum)


def run(args: argparse.Namespace) -> int:
    """Run the soak, check it, write the report; 0 when the run's own checks held."""
    args.work = args.work.resolve()
    signal.signal(signal.SIGTERM, exit_on_sigterm)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    kills = kill_steps(args, random.Random(seed))
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    subprocess.run([MEDPLAY, "convert", "--output", str(args.work / "data")], check=True, capture_output=True)
    settings = own_settings(args)
    soak = Soak(settings={**settings, "seed": seed, "kill_steps": kills, "command": train_command(args)})
    print(f"soak: {args.steps} steps, SIGKILL after steps {kills} (seed {seed}); work folder {args.work}", flush=True)
    for kill_at in [*kills, None]:
        run_segment(args, soak, kill_at)
        segment = soak.segments[-1]
        print(f"soak: run {len(soak.segments) - 1}: {asdict(segment)}", flush=True)
        if soak.problems and segment.killed_after_step is None:
            break
    end = check_end(args, soak) if not soak.problems else {}
    result = soak_figures.analyse(
        soak.samples, soak.step_seconds, soak.step_cpu_seconds, [asdict(s) for s in soak.segments], args
    )
    document = {
        "machine": {**machine(), "load_average": os.getloadavg()},
        "settings": soak.settings,
        "segments": [asdict(segment) for segment in soak.segments],
        "end": end,
        "problems": soak.problems,
        "figures": result,
        "seconds": round(time.monotonic() - soak.started, 1),
        "step_seconds": soak.step_seconds,
        "step_cpu_seconds": soak.step_cpu_seconds,
        "samples": soak.samples,
    }
    facts, written = soak_figures.write(args.report, document)
    for problem in soak.problems:
        print(f"soak: PROBLEM: {problem}", flush=True)
    step_time = result["step_time"]
    rows = [
        ("steps", args.steps),
        ("SIGKILLed after steps", ", ".join(str(step) for step in kills) or "none"),
        ("step time s, first tenth of the steps", step_time.get("first_tenth_median_s")),
        ("step time s, last tenth of the steps", step_time.get("last_tenth_median_s")),
        ("the run's private memory, MiB per 100 steps", result["run_anon_mib_per_100_steps"]),
        ("problems", len(soak.problems)),
    ]
    print_result("the soak: a long run, killed and resumed", rows, facts, written[:2])
    return 1 if soak.problems else 0

