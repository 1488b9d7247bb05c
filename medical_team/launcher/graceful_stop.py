"""Graceful stop, the launcher's half: SIGTERM (what `docker stop` sends) makes the trainer save a checkpoint and finish.

The trainer runs inside a Ray actor, so the launching process cannot interrupt it directly: its
SIGTERM handler drops a stop-request file into the checkpoint folder (medical_team/reliability/stop_request.py),
and the trainer checks for that file at the end of every step (medical_team/task_runner/graceful_stop.py). If the
trainer has not finished within the grace period, the launcher exits with status 143 (killed by SIGTERM) as the shell convention says.
A step whose games wait on the judge cannot end soon, and a trainer still starting has no step to save: then
the launcher does not wait and stops at once (`StoppedWhileWaitingError`, also 143), leaving the checkpoints
as they are.

The handler starts the grace period's timer before anything that can fail: on a full disk or a read-only
checkpoint folder the stop request cannot be written, the trainer can never see it, so the launcher says which
file and why on stderr and stops at once the same way, and the timer still ends the process if nothing else does.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from medical_team.launcher.console.console import say
from medical_team.reliability.stop_request import EXIT_AFTER_GRACE, STOP_FILE, request_stop


class _StopNow(KeyboardInterrupt):
    """Raised in the main thread by the signal handler (Ray's `ray.get` lets only a KeyboardInterrupt out)."""


# Why the last stop did not wait for the step to end (read by the launcher as the main thread unwinds).
stopped_while: list[str] = []


def install_sigterm_handler(
    checkpoint_root: Path, grace_period_s: float, stuck: Callable[[], str | None] = lambda: None
) -> None:
    """On SIGTERM or SIGINT: request a stop, and exit 143 if training has not ended after the grace period.

    When `stuck()` names a reason not to wait for a step to end (games waiting on the judge, the trainer still
    starting), or the stop request cannot be written (a full disk, a read-only folder), the main thread is
    interrupted at once instead (`stopped_while` holds the reason).
    """

    def handle(signum: int, _frame: Any) -> None:
        # The timer first: whatever fails below (and `ray.get` lets only a KeyboardInterrupt out), the process ends.
        timer = threading.Timer(grace_period_s, _exit_after_grace, args=(grace_period_s,))
        timer.daemon = True
        timer.start()
        name = signal.Signals(signum).name
        reason = stuck()
        stop_now = reason is not None
        if reason is not None and not stopped_while:
            say(f"medplay: {name} received while {reason}: stopping now, without waiting for a step to end")
            stopped_while.append(f"{name} received while {reason}")
        else:
            say(f"medplay: {name} received: saving a checkpoint and stopping (grace period {grace_period_s:.0f} s)")
        try:
            request_stop(checkpoint_root, name)
        except OSError as error:
            why = error.strerror or str(error)
            # The trainer can never see this request, so waiting for its step to end would only wait out the grace.
            then = "" if stopped_while else ": the trainer cannot be told to save; stopping now"
            say(f"medplay: cannot write the stop request {checkpoint_root / STOP_FILE} ({why}){then}", err=True)
            if not stopped_while:
                stopped_while.append(f"{name} received but the stop request could not be written ({why})")
            stop_now = True
        if stop_now:
            raise _StopNow

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)


def _exit_after_grace(grace_period_s: float) -> None:
    try:
        say(f"medplay: training did not stop within {grace_period_s:.0f} s of the stop request; exiting", err=True)
    finally:
        os._exit(EXIT_AFTER_GRACE)
