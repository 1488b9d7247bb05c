"""One benchmarked run: a command in a subprocess, its process tree's memory sampled while it runs, the kernel's
account of it when it exits, and the whole tree stopped when it overruns its time."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil


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
