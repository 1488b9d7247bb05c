"""`medplay train` under its watchdog: the run the watchdog is to start and watch, from the composed config.

The config is composed and its `medplay:` section bound here, before anything starts: the watchdog's settings, the
output and checkpoint folders, and the check that its fixed limits end before the run's own timeouts (a setting that
would let NCCL or vLLM end a hang first is refused, exit 2). The watchdog holds the output folder's run lock and hands
it to each attempt (`MEDPLAY_RUN_LOCK_FD`), so a second run on the folder is refused before anything is written there. A config that does not compose or bind is left to the
attempt, which names every mistake in it at once, as `medplay train` does without a watchdog.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from medical_team.common.errors import UserInputError
from medical_team.run_folder.run_lock import INHERITED_FD_ENV, held_descriptor, hold_run_lock
from medical_team.watchdog.supervisor import ATTEMPT_ENV, WATCHDOG_PID_ENV, WatchedRun

PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies


def in_attempt() -> bool:
    """True in the `medplay train` a watchdog started: it trains in its own process."""
    return bool(os.environ.get(ATTEMPT_ENV))


def end_with_watchdog() -> None:
    """In an attempt: SIGTERM this process when its watchdog dies (SIGKILLed), so that no run goes on unwatched; the
    attempt then saves and stops as after `docker stop`. A watchdog already gone by now ends it at once."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if str(os.getppid()) != os.environ.get(WATCHDOG_PID_ENV):
        os.kill(os.getpid(), signal.SIGTERM)


def watched_run(overrides: Sequence[str], *, verbose: bool) -> WatchedRun | None:
    """The run to watch for these (final) overrides; None when its watchdog is off or the config is the attempt's to
    refuse."""
    from medical_team.launcher.config.compose import compose_config
    from medical_team.run.settings import settings_from_trainer_config
    from medical_team.run.stall_limits import run_timeouts, timeout_problems

    try:
        config = compose_config(list(overrides))
        settings = settings_from_trainer_config(config)
    except (UserInputError, ValueError):
        return None
    watchdog = settings.watchdog
    if not watchdog.enabled:
        return None
    problems = timeout_problems(watchdog, run_timeouts(config, os.environ))
    if problems:
        raise UserInputError("the watchdog would see a hang too late: " + "; ".join(problems), field="medplay.watchdog")
    # The output folder's lock, held here for the whole run and handed to each attempt (where the watchdog writes).
    output_dir = Path(settings.output_dir)
    hold_run_lock(output_dir)
    lock = held_descriptor(output_dir)
    command = [_medplay(), "train", *(["--verbose"] if verbose else []), *overrides]
    return WatchedRun(
        command=command,
        output_dir=output_dir,
        checkpoint_dir=Path(config.trainer.default_local_dir),
        run_folder=str(config.ray_kwargs.ray_init.runtime_env.env_vars.MEDPLAY_RUN_FOLDER),
        settings=watchdog,
        pass_fds=() if lock is None else (lock,),
        env={**os.environ, **({} if lock is None else {INHERITED_FD_ENV: str(lock)})},
    )


def attempt_number() -> int:
    """Which attempt of its run this `medplay train` is (1 without a watchdog)."""
    return int(os.environ.get(ATTEMPT_ENV) or 1)


def _medplay() -> str:
    """This installation's `medplay` command (beside its Python, else on PATH)."""
    beside = Path(sys.executable).with_name("medplay")
    return str(beside) if beside.is_file() else shutil.which("medplay") or "medplay"
