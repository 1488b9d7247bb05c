"""Helpers for tests that start processes: free loopback ports, a SIGTERM once ready, stopping a whole session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil

from medical_team.run.port_claim import hold_port, hold_ports


def free_port() -> int:
    """A port claimed on the host for a test's server, held until the test process exits (no other claim takes it)."""
    return hold_port("a test's server")


def free_ports(count: int) -> list[int]:
    """`count` different ports claimed as `free_port` claims one."""
    return hold_ports(count, "a test's servers")


def sigterm_once_ready(folder: Path, reason: str, setup: str = "", context: str = "contextlib.nullcontext()"):
    """A Python process with medplay's SIGTERM handler (stop folder `folder`, 600 s grace, `reason` its why-not-wait
    callback) that waits inside `context`: SIGTERM once it says `ready`; its exit status and output."""
    code = (
        "import contextlib, sys, time\nfrom pathlib import Path\n"
        "from medical_team.launcher.graceful_stop import install_sigterm_handler, stopped_while\n"
        f"folder = Path(sys.argv[1])\n{setup}\ninstall_sigterm_handler(folder, 600, {reason})\n"
        f"try:\n    with {context}:\n        print('ready', flush=True)\n        time.sleep(600)\n"
        "except KeyboardInterrupt:\n    print('stopped:', stopped_while[0], flush=True)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", code, str(folder)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    said = []
    for line in process.stdout:
        said.append(line)
        if line == "ready\n":
            break
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=60)
    return process.returncode, "".join(said) + out


def stop_session(session_id: int, grace_s: float = 20) -> None:
    """TERM, then KILL, every process still in this session (supervisord, Ray, their children)."""

    def members() -> list[psutil.Process]:
        found = []
        for process in psutil.process_iter():
            try:
                if os.getsid(process.pid) == session_id:
                    found.append(process)
            except (ProcessLookupError, PermissionError, psutil.Error):
                continue
        return found

    for process in members():
        try:
            process.send_signal(signal.SIGTERM)
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(members(), timeout=grace_s)
    for process in alive:
        try:
            process.kill()
        except psutil.Error:
            pass
