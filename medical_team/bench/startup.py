"""Benchmark: what a CPU run's start costs, from `medplay train` to verl's trainer ready and to step 1, by process role.

    medplay bench startup                                   # `make bench-startup`; build/bench_startup.json
    medplay bench startup --against 94ed7fe,9f9541b --rounds 2   # alternating with commits

Each run is `medplay train` on the cpu-smoke profile (the tiny model built once, the bundled data converted once) to
its first step, no checkpoints. Two kinds of run: medplay's self-play, and verl's stock single-turn step started the
same way (`STOCK_OVERRIDES`: verl's agent loop, manager, estimator and trainer; stock_step.py). While a run
starts, every process under it is sampled every `--every` seconds (psutil: its role from its command line or process
title, medical_team/run/processes.py, and its CPU seconds); the sums by role are taken when the log says verl's
trainer is ready ("all initialize finished, ready to fit") and when step 1's metrics line is written. A process that
exits between two samples loses at most one interval of its CPU time; the kernel's exact account of the whole run
(`wait4`, shut-down included) is kept beside them.

With `--against COMMIT[,COMMIT...]` each commit is checked out in a git worktree under the scratch folder and every
round runs this checkout and then each commit (PYTHONPATH points the same virtualenv at each tree in turn, and each
run starts in its tree, whose folder Ray's workers import from too), so that a ratio is measured in one sitting on a
machine whose speed moves from day to day. verl's stock step runs from this checkout only.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

from medical_team.bench.commands import medplay_script
from medical_team.bench.results import write_json
from medical_team.bench.stock_step import STOCK_OVERRIDES
from medical_team.bench.table import print_result
from medical_team.bench.training_runs import cpu_smoke_overrides, prepare
from medical_team.launcher.console.appended_lines import AppendedLines
from medical_team.run.processes import process_kind
from medical_team.run.stack import SOURCE_ROOT, git_commit, stack_versions

READY_LINE = "all initialize finished, ready to fit"  # verl's last start-up line (launcher/console/startup.py)
KINDS = {"medplay": (), "stock": STOCK_OVERRIDES}
ROOT = SOURCE_ROOT  # the checkout (or the installed package's folder) that `--against` alternates with


@dataclass
class StartSample:
    """One process's latest reading: its role and its CPU seconds so far."""

    kind: str
    cpu_s: float


@dataclass
class StartRun:
    """One measured start."""

    tree: str
    kind: str
    round: int
    returncode: int = -1
    ready_s: float | None = None  # wall seconds from launch to verl's trainer ready
    step1_s: float | None = None  # ... to step 1's metrics line
    cpu_ready: dict[str, float] = field(default_factory=dict)  # CPU seconds by role at trainer ready
    cpu_step1: dict[str, float] = field(default_factory=dict)
    processes: int = 0  # processes seen over the run
    exact_cpu_s: float = 0.0  # the kernel's account of the whole run (wait4), its shut-down included

    @property
    def cpu_ready_s(self) -> float | None:
        """CPU seconds of every process at trainer ready (None: never ready)."""
        return round(sum(self.cpu_ready.values()), 1) if self.cpu_ready else None

    @property
    def cpu_step1_s(self) -> float | None:
        """CPU seconds of every process at step 1 (None: no step 1)."""
        return round(sum(self.cpu_step1.values()), 1) if self.cpu_step1 else None


def by_role(samples: dict[tuple[int, float], StartSample]) -> dict[str, float]:
    """CPU seconds summed by role, largest first."""
    totals: dict[str, float] = {}
    for sample in samples.values():
        totals[sample.kind] = totals.get(sample.kind, 0.0) + sample.cpu_s
    return {kind: round(seconds, 2) for kind, seconds in sorted(totals.items(), key=lambda item: -item[1])}


def sample_tree(root: psutil.Process, samples: dict[tuple[int, float], StartSample]) -> None:
    """Update `samples` with every live process under `root` (and `root`)."""
    try:
        members = [root, *root.children(recursive=True)]
    except psutil.Error:
        return
    for member in members:
        try:
            with member.oneshot():
                cpu = member.cpu_times()
                key = (member.pid, member.create_time())
                samples[key] = StartSample(process_kind(member.cmdline()), cpu.user + cpu.system)
        except psutil.Error:
            continue


def measure(run: StartRun, command: list[str], tree: Path, folder: Path, every_s: float, timeout_s: float) -> None:
    """Run `command` from `tree` to its end, filling `run` with its start's times and CPU by role."""
    folder.mkdir(parents=True, exist_ok=True)
    log, metrics = folder / "console.log", folder / "checkpoints" / "metrics.jsonl"
    samples: dict[tuple[int, float], StartSample] = {}
    logs = RunLogs(folder)
    env = tree_env(tree)
    started = time.monotonic()
    with log.open("wb") as sink:
        child = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.STDOUT, env=env, cwd=tree, start_new_session=True
        )
        root = psutil.Process(child.pid)
        done = threading.Event()

        def look() -> float:
            """Time trainer ready and step 1 once the run's files show them; the seconds since the start."""
            now = time.monotonic() - started
            if run.ready_s is None and logs.show(READY_LINE):
                run.ready_s, run.cpu_ready = round(now, 1), by_role(samples)
            if run.step1_s is None and metrics.is_file() and metrics.read_text().strip():
                run.step1_s, run.cpu_step1 = round(now, 1), by_role(samples)
            return now

        def watch() -> None:
            while not done.is_set():
                sample_tree(root, samples)
                if look() > timeout_s:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(child.pid, signal.SIGKILL)
                done.wait(every_s)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        _, status, usage = os.wait4(child.pid, 0)
        done.set()
        watcher.join()
        look()  # what the run wrote between the watcher's last look and its exit
    run.returncode = os.waitstatus_to_exitcode(status)
    run.processes = len(samples)
    run.exact_cpu_s = round(usage.ru_utime + usage.ru_stime, 1)


class RunLogs:
    """The run's log files (where verl's start-up lines land), each read from where the last look stopped."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._files: dict[Path, AppendedLines] = {}

    def show(self, text: str) -> bool:
        """True once a line appended since the last look holds `text`."""
        for path in self.folder.glob("logs/train-*.log"):
            self._files.setdefault(path, AppendedLines(path))
        return any(text in line for lines in self._files.values() for line in lines.read())


def tree_of(commit: str, work: Path) -> Path:
    """A worktree of `commit` under `work` (made once)."""
    folder = work / "trees" / commit
    if not (folder / "medical_team").is_dir():
        folder.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(folder), commit], check=True)
    return folder


def tree_env(tree: Path) -> dict[str, str]:
    """This environment with `medical_team` imported from `tree` (checked)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    found = subprocess.run(
        [sys.executable, "-c", "import medical_team; print(medical_team.__file__)"],
        env=env, cwd=tree, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    if not found.startswith(str(tree)):
        raise SystemExit(f"PYTHONPATH={tree} still imports medical_team from {found}")
    return env


def medians(runs: list[StartRun]) -> dict[str, dict[str, float | None]]:
    """Median wall and CPU seconds of each (tree, kind)."""
    table: dict[str, dict[str, float | None]] = {}
    for tree, kind in sorted({(run.tree, run.kind) for run in runs}):
        chosen = [run for run in runs if (run.tree, run.kind) == (tree, kind) and run.returncode == 0]

        def median(values: list[float | None]) -> float | None:
            known = [value for value in values if value is not None]
            return round(statistics.median(known), 1) if known else None

        table[f"{tree}/{kind}"] = {
            "ready_s": median([run.ready_s for run in chosen]),
            "step1_s": median([run.step1_s for run in chosen]),
            "cpu_ready_s": median([run.cpu_ready_s for run in chosen]),
            "cpu_step1_s": median([run.cpu_step1_s for run in chosen]),
            "runs": len(chosen),
        }
    return table


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator to three places, or None when either is unknown."""
    return round(numerator / denominator, 3) if numerator and denominator else None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`medplay bench startup`'s options."""
    parser.add_argument("--against", default="", help="commits to alternate with, comma-separated (git worktrees)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of every tree and kind (default 2)")
    parser.add_argument("--kinds", default="medplay,stock", help="runs per round: medplay, stock (default both)")
    parser.add_argument("--every", type=float, default=0.3, help="seconds between samples of the process tree")
    parser.add_argument("--work", type=Path, default=Path("build/bench-startup"), help="scratch folder")
    parser.add_argument("--output", type=Path, default=Path("build/bench_startup.json"), help="result file")
    parser.add_argument("--timeout", type=float, default=900, help="seconds allowed per run")


def run(args: argparse.Namespace) -> int:
    """Measure the starts, alternating trees and kinds, and write the JSON; 0 when every run finished."""
    work = args.work.resolve()
    data, model = prepare(work)
    against = [commit for commit in args.against.split(",") if commit]
    trees = {"this": ROOT, **{commit: tree_of(commit, work) for commit in against}}
    kinds = args.kinds.split(",")
    runs: list[StartRun] = []
    for number in range(1, args.rounds + 1):
        for name, tree in trees.items():
            for kind in kinds if name == "this" else [kind for kind in kinds if kind == "medplay"]:
                run = StartRun(name, kind, number)
                folder = work / "runs" / f"{number}-{name}-{kind}"
                command = [
                    *medplay_script("train"),
                    *cpu_smoke_overrides(data, model, 1),
                    f"medplay.output_dir={folder}",
                    *KINDS[kind],
                ]
                measure(run, command, tree, folder, args.every, args.timeout)
                runs.append(run)
                print(
                    f"round {number} {name} {kind}: exit {run.returncode}, trainer ready {run.ready_s} s "
                    f"({run.cpu_ready_s} CPU s), step 1 {run.step1_s} s ({run.cpu_step1_s} CPU s), "
                    f"{run.processes} processes",
                    flush=True,
                )
    table = medians(runs)
    this, stock = table.get("this/medplay", {}), table.get("this/stock", {})
    ratios: dict[str, float | None] = {
        "ready_medplay_over_stock": ratio(this.get("ready_s"), stock.get("ready_s")),
        "cpu_ready_medplay_over_stock": ratio(this.get("cpu_ready_s"), stock.get("cpu_ready_s")),
    }
    for commit in against:
        other = table.get(f"{commit}/medplay", {})
        ratios[f"cpu_ready_this_over_{commit}"] = ratio(this.get("cpu_ready_s"), other.get("cpu_ready_s"))
        ratios[f"ready_this_over_{commit}"] = ratio(this.get("ready_s"), other.get("ready_s"))
        ratios[f"step1_this_over_{commit}"] = ratio(this.get("step1_s"), other.get("step1_s"))
    report = {
        "what": "a cpu-smoke run's start to verl's trainer ready and to step 1, CPU seconds by process role",
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": git_commit(ROOT),
        "against": against,
        "host": {"platform": platform.platform(), "cpus": os.cpu_count(), "load_average_end": os.getloadavg()},
        "versions": stack_versions(),
        "medians": table,
        "ratios": ratios,
        "runs": [{**asdict(run), "cpu_ready_s": run.cpu_ready_s, "cpu_step1_s": run.cpu_step1_s} for run in runs],
    }
    facts = write_json(args.output, report)
    rows = [
        (key, row["ready_s"], row["cpu_ready_s"], row["step1_s"], row["cpu_step1_s"], row["runs"])
        for key, row in table.items()
    ]
    rows += [(name, value, "", "", "", "") for name, value in ratios.items()]
    header = ("tree/kind", "trainer ready s", "CPU s to ready", "step 1 s", "CPU s to step 1", "runs")
    print_result("a cpu-smoke run's start, by tree and kind (medians)", rows, facts, [args.output], header)
    return 0 if all(run.returncode == 0 for run in runs) else 1

