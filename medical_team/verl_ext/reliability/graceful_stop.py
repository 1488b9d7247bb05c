"""Graceful stop: SIGTERM (what `docker stop` sends) makes the trainer save a checkpoint and finish.

The trainer runs inside a Ray actor, so the launching process cannot interrupt it directly: its
SIGTERM handler drops a stop-request file into the checkpoint folder, and the trainer checks for
that file at the end of every step (`honour_stop_request`). If the trainer has not finished within
the grace period, the launcher exits with status 143 (killed by SIGTERM) as the shell convention says.
A step whose games wait on the judge cannot end soon, and a trainer still starting has no step to save: then
the launcher does not wait and stops at once (`StoppedWhileWaitingError`, also 143), leaving the checkpoints
as they are.

The handler starts the grace period's timer before anything that can fail: on a full disk or a read-only
checkpoint folder the stop request cannot be written, the trainer can never see it, so the launcher says which
file and why on stderr and stops at once the same way, and the timer still ends the process if nothing else does.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from medical_team.console import say

STOP_FILE = "medplay_stop_requested"
EXIT_AFTER_GRACE = 143  # 128 + SIGTERM
log = logging.getLogger(__name__)


def request_stop(checkpoint_root: Path, reason: str) -> None:
    """Ask the trainer writing to `checkpoint_root` to save and stop after its current step."""
    checkpoint_root.mkdir(parents=True, exist_ok=True)
    (checkpoint_root / STOP_FILE).write_text(f"{reason} at {time.time():.0f}\n")


def stop_requested(checkpoint_root: Path) -> bool:
    """Whether a stop was requested for this checkpoint folder."""
    return (checkpoint_root / STOP_FILE).exists()


def clear_stop_request(checkpoint_root: Path) -> None:
    """Forget an old stop request (a new run starts)."""
    (checkpoint_root / STOP_FILE).unlink(missing_ok=True)


class StoppedWhileWaitingError(RuntimeError):
    """A stop request came while games waited on the judge: the run ended without finishing its step."""

    exit_status = EXIT_AFTER_GRACE


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


def honour_stop_request(trainer: Any, checkpoint_root: Path, saved_this_step: bool) -> bool:
    """Called by the trainer after each step: on a stop request, save (unless just saved) and end the loop."""
    if not stop_requested(checkpoint_root):
        return False
    end_after_this_step(trainer, saved_this_step, "stop requested")
    return True


def end_after_this_step(trainer: Any, saved_this_step: bool, reason: str) -> None:
    """Save a checkpoint of the current step (unless just saved) and make this step the last one.

    Ending the loop by lowering `total_training_steps` lets verl's own `fit` finish normally
    (loggers closed, `on_train_end` run) instead of unwinding through an exception.
    """
    if not saved_this_step:
        trainer._save_checkpoint()
    log.warning("%s: checkpoint global_step_%s saved, ending training", reason, trainer.global_steps)
    trainer.total_training_steps = trainer.global_steps
