"""The processes of one attempt of a run, found from outside it, and stopping all of them.

An attempt is the `medplay train` process the watchdog started and everything under it (the Ray cluster it
started, verl's workers, vLLM's engine processes, the served judge), and every other process that carries the run's
key in its environment (`MEDPLAY_RUN_FOLDER`, configs/medplay.yaml's env_vars: the Ray workers of a cluster the run
joined over `RAY_ADDRESS`, which are not under it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time

import psutil

from medical_team.run.run_key import RUN_FOLDER_ENV


def attempt_processes(leader: int, run_folder: str) -> list[psutil.Process]:
    """The live processes of the attempt whose `medplay train` is `leader`, in pid order; never this process."""
    found: dict[int, psutil.Process] = {}
    try:
        root = psutil.Process(leader)
        for process in [root, *root.children(recursive=True)]:
            found[process.pid] = process
    except psutil.Error:
        pass
    for process in psutil.process_iter():
        if process.pid in found:
            continue
        try:
            if process.environ().get(RUN_FOLDER_ENV) == run_folder:
                found[process.pid] = process
        except psutil.Error:  # gone, or not ours to read
            continue
    found.pop(os.getpid(), None)
    return [found[pid] for pid in sorted(found)]


def stop_processes(processes: list[psutil.Process], leader: subprocess.Popen, grace_s: float) -> list[int]:
    """SIGTERM each process and the attempt's `leader` (and SIGCONT, so that a stopped one can act on it), then SIGKILL
    those alive `grace_s` later; return the pids that had to be killed. The leader is reaped through its Popen, which
    keeps its exit status."""
    others = [process for process in processes if process.pid != leader.pid]
    for sig in (signal.SIGTERM, signal.SIGCONT):
        _signal_all(others, leader, sig)
    deadline = time.monotonic() + grace_s
    _, alive = psutil.wait_procs(others, timeout=grace_s)
    killed = [process.pid for process in alive]
    try:
        leader.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        killed.append(leader.pid)
    _signal_all(alive, leader if leader.poll() is None else None, signal.SIGKILL)
    psutil.wait_procs(alive, timeout=10)
    with contextlib.suppress(subprocess.TimeoutExpired):
        leader.wait(timeout=10)
    return sorted(killed)


def _signal_all(processes: list[psutil.Process], leader: subprocess.Popen | None, sig: int) -> None:
    for process in processes:
        with contextlib.suppress(psutil.Error):
            process.send_signal(sig)
    if leader is not None and leader.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            leader.send_signal(sig)
