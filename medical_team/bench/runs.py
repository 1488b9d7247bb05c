"""Helpers of scripts/bench.py and scripts/gpu_kit.py: the stock step's overrides, one training run in a subprocess
while sampling its memory, and its metrics summarised."""

from __future__ import annotations

import os
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from medical_team.evaluate.metrics_log import read_metrics

# verl's phase timers (`timing_s/<name>`) reported per phase; `gen` includes the agent loop's judge calls.
PHASES = ("gen", "reward", "old_log_prob", "ref", "adv", "update_actor", "update_weights")
# verl's stock single-turn GRPO step, which the self-play step is compared with (scripts/bench.py, the GPU kit's
# bench phase): verl's own agent loop and manager, the `grpo` estimator and the stock `sync` V1 trainer. Its replay
# buffer looks for finished rows as often as medplay's (verl's sampler seam, medical_team/task_runner/replay_poll.py):
# with verl's 2 s poll the comparison measured the poll, not the step.
STOCK_OVERRIDES = (
    "actor_rollout_ref.rollout.agent.default_agent_loop=single_turn_agent",
    "actor_rollout_ref.rollout.agent.agent_loop_manager_class=null",
    "algorithm.adv_estimator=grpo",
    "trainer.v1.trainer_mode=sync",
    "trainer.v1.sampler.custom_sampler.path=pkg://medical_team.task_runner.replay_poll",
    "trainer.v1.sampler.custom_sampler.name=QuickPollReplayBuffer",
)


@dataclass(frozen=True)
class RunResult:
    """How a benchmarked subprocess ended and what it used."""

    returncode: int
    wall_s: float
    peak_rss_mib: float  # largest sum of resident memory over the process and all its descendants (sampled)
    log: Path
    # The kernel's account when the process exits (exact, no sampling): the peak resident memory of the largest
    # single process among it and the descendants it waited for, and their CPU seconds (user + system) together.
    # The peak is at least the caller's own resident size when it started the process: the child starts as a copy
    # of the caller, and the kernel counts that image too.
    max_rss_mib: float = 0.0
    cpu_s: float = 0.0


def _tree_rss(process: psutil.Process) -> int:
    """Resident bytes of a process and all its descendants (Ray workers, vLLM) at this moment."""
    total = 0
    for member in [process, *process.children(recursive=True)]:
        try:
            total += member.memory_info().rss
        except psutil.Error:
            continue
    return total


def run_sampled(command: list[str], log: Path, timeout_s: float, every_s: float = 0.5) -> RunResult:
    """Run `command` with output to `log`, sampling the process tree's memory until it exits or times out."""
    log.parent.mkdir(parents=True, exist_ok=True)
    peak = 0
    started = time.perf_counter()
    with log.open("wb") as sink:
        child = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
        watched = psutil.Process(child.pid)
        stop = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not stop.is_set():
                try:
                    peak = max(peak, _tree_rss(watched))
                except psutil.Error:
                    return
                stop.wait(every_s)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        exited = threading.Event()
        overrun = threading.Timer(timeout_s, _kill_tree, args=(watched, exited))
        overrun.start()
        try:
            # wait4, not Popen.wait: the kernel's account of the child (peak RSS, CPU time) comes with its status.
            _, status, usage = os.wait4(child.pid, 0)
        finally:
            exited.set()
            overrun.cancel()
            overrun.join()
            stop.set()
            sampler.join()
        child.returncode = os.waitstatus_to_exitcode(status)
    wall_s = time.perf_counter() - started
    max_rss_mib = usage.ru_maxrss / 1024  # Linux reports KiB
    cpu_s = usage.ru_utime + usage.ru_stime
    return RunResult(child.returncode, wall_s, peak / 2**20, log, max_rss_mib, cpu_s)


def _kill_tree(process: psutil.Process, exited: threading.Event, grace_s: float = 10.0) -> None:
    """Terminate a process that overran its time and everything it started; kill what is left after `grace_s`.

    The process itself is reaped by `run_sampled`'s wait4, which sets `exited`; never here, where psutil's wait would
    take its exit status and the kernel's account with it.
    """
    try:
        descendants = process.children(recursive=True)
    except psutil.Error:
        return
    for member in [*descendants, process]:
        try:
            member.terminate()
        except psutil.Error:
            continue
    deadline = time.monotonic() + grace_s
    exited.wait(grace_s)
    _, alive = psutil.wait_procs(descendants, timeout=max(0.0, deadline - time.monotonic()))
    for member in [*alive, process]:
        try:
            member.kill()  # psutil refuses a process id that another process took since
        except psutil.Error:
            continue


def _median(values: list[float]) -> float | None:
    """Median of the values, or None when there are none."""
    return statistics.median(values) if values else None


def summarise_metrics(metrics_file: Path, skip_steps: int) -> dict[str, Any]:
    """Median per-step figures from verl's metrics JSONL, leaving out the first `skip_steps` (warm-up) steps."""
    history = read_metrics(metrics_file)
    kept = history.steps[skip_steps:] or history.steps

    def median_of(name: str) -> float | None:
        steps, values = history.series(name)
        return _median([v for s, v in zip(steps, values) if s in kept])

    _, reserved = history.series("actor/perf/max_memory_reserved_gb")
    judge_calls, judge_latency = median_of("judge/calls"), median_of("judge/latency_s")
    untimed = [
        row["timing_s/step"] - sum(row.get(f"timing_s/{phase}", 0.0) for phase in PHASES)
        for step, row in history.rows.items()
        if step in kept and "timing_s/step" in row
    ]
    return {
        "steps_logged": len(history.steps),
        "peak_device_memory_reserved_gib": max(reserved) if reserved else None,
        "steps_measured": kept,
        "step_s": median_of("timing_s/step"),
        "phase_s": {phase: median_of(f"timing_s/{phase}") for phase in PHASES},
        "outside_phases_s": _median(untimed),  # step time no phase timer covers (metrics, buffer waits)
        "tokens_per_step": median_of("perf/total_num_tokens"),
        "tokens_per_s": median_of("perf/throughput"),
        "samples_attacker": median_of("samples/attacker"),
        "samples_assessor": median_of("samples/assessor"),
        "judge_latency_s": judge_latency,
        "judge_calls": judge_calls,
        # One judge invocation per adversarial game; they overlap inside timing_s/gen, so this is an upper bound.
        "judge_s_per_step": judge_calls * judge_latency
        if judge_calls is not None and judge_latency is not None
        else None,
        "games": median_of("game/games"),
        "response_length_mean": median_of("response_length/mean"),
        "prompt_length_mean": median_of("prompt_length/mean"),
    }
