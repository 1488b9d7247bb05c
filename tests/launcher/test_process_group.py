"""`medical_team.launcher.process_group.stop_process_group` on real processes: a leader and the child it started.

Run: PYTHONPATH=tests .venv/bin/python -m pytest -q tests/launcher/test_process_group.py
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import psutil

from medical_team.launcher.process_group import stop_process_group

# The leader starts a child (same process group), says its pid, and waits; on SIGTERM it does as `argv[1]` says.
LEADER = """
import signal, subprocess, sys, time
if sys.argv[1] == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the child inherits it
elif sys.argv[1] == "exit":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(child.pid, flush=True)
time.sleep(600)
"""


@contextmanager
def leader_and_child(on_term: str) -> Iterator[tuple[subprocess.Popen, int]]:
    """The leader of a new session and its child's pid, once the child runs; whatever is left is killed after."""
    leader = subprocess.Popen(
        [sys.executable, "-c", LEADER, on_term], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert leader.stdout is not None
    child = int(leader.stdout.readline())
    try:
        yield leader, child
    finally:
        for pid in (child, leader.pid):
            if running(pid):
                psutil.Process(pid).kill()
        leader.wait(timeout=30)


def running(pid: int) -> bool:
    """True while the process exists and is not a zombie waiting to be reaped."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_gone(pid: int) -> None:
    """Wait until the process has ended (reaped or a zombie)."""
    try:
        psutil.Process(pid).wait(timeout=30)
    except psutil.NoSuchProcess:
        pass
    except psutil.TimeoutExpired:
        assert not running(pid), f"process {pid} still runs"


def test_term_reaches_the_whole_group() -> None:
    with leader_and_child("default") as (leader, child):
        assert stop_process_group(leader, grace_s=60) == -signal.SIGTERM
        wait_gone(child)


def test_a_group_that_ignores_term_is_killed_after_the_grace() -> None:
    with leader_and_child("ignore") as (leader, child):
        assert stop_process_group(leader, grace_s=0.5) == -signal.SIGKILL
        wait_gone(child)


def test_term_to_the_leader_only_leaves_the_rest_to_it() -> None:
    with leader_and_child("exit") as (leader, child):
        assert stop_process_group(leader, grace_s=60, term_leader_only=True) == 0
        assert running(child)  # it got no signal; the leader exited within the grace, so nothing was killed


def test_a_process_that_has_ended_is_only_read() -> None:
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"], start_new_session=True)
    process.wait(timeout=60)
    assert stop_process_group(process, grace_s=60) == 3
