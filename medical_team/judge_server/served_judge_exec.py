"""Runs the judge's vLLM server command so that it ends with the launcher, even when the launcher is SIGKILLed.

    python -m medical_team.judge_server.served_judge_exec COMMAND [ARG...]

The first code of the served judge's process: it asks Linux for SIGTERM when its parent (the launcher) dies, then
execs COMMAND in this same process: an exec wrapper rather than `preexec_fn`, which is unsafe in a process with
threads. Tests make the server's process run out of memory here with MEDPLAY_INJECT_OOM=judge_server
(medical_team/run/oom_injection.py).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

from medical_team.run.oom_injection import INJECT_ENV, INJECTED, JUDGE_SERVER

_PR_SET_PDEATHSIG = 1


def inject_in_judge_server() -> None:
    """Tests only: $MEDPLAY_INJECT_OOM=judge_server makes the judge's server process raise torch's error as it starts."""
    if os.environ.get(INJECT_ENV) == JUDGE_SERVER:
        from torch import OutOfMemoryError

        # The server's log shows this line in the traceback: it must not read as a fatal line (FATAL_LINES) itself.
        raise OutOfMemoryError(f"{INJECTED} in {JUDGE_SERVER}")


def exec_with_parent_death_signal(command: list[str]) -> None:
    """Replace this process with `command`, to be sent SIGTERM when the parent dies."""
    inject_in_judge_server()  # tests only
    try:
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass
    os.execvp(command[0], command)


if __name__ == "__main__":
    exec_with_parent_death_signal(sys.argv[1:])
