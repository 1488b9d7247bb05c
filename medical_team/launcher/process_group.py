"""Stopping a child that leads its own process group (started with `start_new_session=True`): TERM, then KILL.

The launcher stops the judge's vLLM server this way, and the GPU kit (scripts/gpu_kit_train.py) its training runs.
"""

from __future__ import annotations

import os
import signal
import subprocess


def stop_process_group(
    process: subprocess.Popen, grace_s: float, *, term_leader_only: bool = False, kill_wait_s: float | None = 10.0
) -> int | None:
    """SIGTERM the group (or, with `term_leader_only`, its leader alone, so that it stops the rest itself), and
    SIGKILL the whole group if the leader has not exited `grace_s` later.

    Returns the leader's exit status, or None if it still runs `kill_wait_s` after the KILL (None: wait for it).
    """
    if process.poll() is not None:
        return process.returncode
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, kill_wait_s)):
        try:
            if sig == signal.SIGTERM and term_leader_only:
                process.send_signal(sig)
            else:
                os.killpg(process.pid, sig)
        except ProcessLookupError:  # the whole group is gone already
            return process.poll()
        try:
            return process.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue
    return None
