"""`medplay bench soak` stopped by its user (SIGTERM, as Ctrl-C): the run it started and watches stops with it.

Before, the soak's own exit left `medplay train` and its Ray cluster training on, unwatched, into a folder the next
soak deletes. The soak here starts a real cpu-smoke run and is stopped once the run's Ray processes exist.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from cpu_smoke import MEMORY_FLOOR

from medical_team.bench.commands import medplay_here

pytestmark = [pytest.mark.slow]

RAY_PROCESSES = 4  # the launcher and at least Ray's GCS, raylet and one more of its own: the cluster is up


def run_tree(soak: psutil.Process) -> list[psutil.Process]:
    """The soak's descendants: `medplay train` and everything it started."""
    try:
        return soak.children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def described(process: psutil.Process) -> str:
    """A process's pid and command line, as far as it can still be read."""
    try:
        return f"{process.pid} {' '.join(process.cmdline()[:3])}"
    except psutil.Error:
        return str(process.pid)


def test_a_stopped_soak_stops_its_run_and_its_ray_cluster(tmp_path: Path) -> None:
    command = medplay_here(
        "bench", "soak", "--steps", "50", "--kills", "0", "--save-freq", "10",
        "--work", str(tmp_path / "work"), "--report", str(tmp_path / "report" / "soak"),
        "--override", f"{MEMORY_FLOOR}=0",
    )  # fmt: skip
    soak = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    watched = psutil.Process(soak.pid)
    tree: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 300  # a hang guard: the launcher's checks, then Ray's start
        while len(tree) < RAY_PROCESSES and soak.poll() is None:
            assert time.monotonic() < deadline, "the run's Ray cluster did not start"
            time.sleep(0.5)
            tree = run_tree(watched)
        assert soak.poll() is None, soak.communicate()[0][-3000:]
        soak.send_signal(signal.SIGTERM)
        output, _ = soak.communicate(timeout=120)
    finally:
        if soak.poll() is None:
            soak.kill()
    _, alive = psutil.wait_procs(tree, timeout=60)
    left = [described(process) for process in alive]
    for process in alive:  # not to leave them to the next tests
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    assert left == [], left
    assert soak.returncode == 128 + signal.SIGTERM, output[-3000:]
