"""Errors that stop a training run on purpose, found again inside the Ray errors that carry them to the launcher."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import NoReturn

from medical_team.judge.gold_probe import JudgeGoldFloorError
from medical_team.judge.outage import JudgeUnavailableError
from medical_team.launcher.console.console import say
from medical_team.reliability.guards import NonFiniteTrainingError
from medical_team.reliability.stop_request import StoppedWhileWaitingError
from medical_team.run.failures import (
    ActorProcessDiedError,
    AllTiesError,
    JudgeServerError,
    MetricsWriteError,
    ResourceFloorError,
)

# Raised in a Ray actor (agent-loop worker or trainer) or the launcher to end the run with a message for the user.
RUN_STOPPING_ERRORS: tuple[type[BaseException], ...] = (
    JudgeUnavailableError,
    NonFiniteTrainingError,
    AllTiesError,
    JudgeServerError,
    JudgeGoldFloorError,
    StoppedWhileWaitingError,
    MetricsWriteError,
    ActorProcessDiedError,
    ResourceFloorError,
)


def run_stopping_cause(error: BaseException) -> BaseException | None:
    """The run-stopping error behind `error` (through Ray's task errors and exception chains), if any."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [error]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, RUN_STOPPING_ERRORS):
            return current
        # Ray's RayTaskError keeps the remote exception in `.cause`; Python chains keep theirs in __cause__/__context__.
        pending += [getattr(current, "cause", None), current.__cause__, current.__context__]
    return None


def one_line(error: BaseException) -> str:
    """The error's own message, without Ray's remote traceback."""
    cause = getattr(error, "cause", None)
    text = str(cause if isinstance(cause, BaseException) else error)
    return text.strip().splitlines()[-1] if text.strip() else type(error).__name__


def failure_report(error: BaseException) -> tuple[str, int]:
    """The last line `medplay train` says for a run that failed with `error`, and its exit status.

    Out of memory: the phase, figures and knobs, status 4; a run-stopping error: its own status (1 unless it
    names one: the served judge 4 or 5, a resource at its floor 6, a stop while games waited on the judge 143);
    anything else: 1.
    """
    from medical_team.launcher.failures.out_of_memory import RunOutOfMemoryError
    from medical_team.run.failures import OUT_OF_MEMORY_EXIT

    if isinstance(error, RunOutOfMemoryError):
        return f"medplay train: {error}", OUT_OF_MEMORY_EXIT
    cause = run_stopping_cause(error)
    if cause is not None:
        return f"medplay train: stopped: {one_line(cause)}", int(getattr(cause, "exit_status", 1))
    return f"medplay train: failed: {type(error).__name__}: {one_line(error)}", 1


_ending = threading.Lock()


def end_run(line: str, status: int) -> NoReturn:
    """Say the run's last line on stderr and end the process with `status` now; the first thread here wins.

    The interpreter's teardown is skipped: a failed run can leave Ray's or vLLM's native threads half torn
    down, and the teardown then crashed (SIGSEGV after a judge server failed while Ray was starting) and the
    documented status was lost. The launcher's main thread and its judge deadline can both get here.
    """
    _ending.acquire()  # a second caller waits here until the first one's exit ends the process
    say(line, err=True)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # fd 1 and 2 may still be a log on a full disk
            stream.flush()
    os._exit(status)
