"""Tests only: the phase hold a test asks for, `MEDPLAY_INJECT_HOLD=PHASE@N:HELD:RELEASE`, read once for both sides.

The N-th call of PHASE writes the file HELD, then waits until the file RELEASE exists before it runs, so that a test
acts while the run provably sits in that step. PHASE is a worker method's phase (a key of PHASE_METHODS,
run/step_phases.py: the plugin wraps verl's method, plugin/step_hold.py) or a phase the trainer marks in the progress
record (`TRAINER_PHASES`: its N-th beginning holds the trainer itself, in the task runner's process, as a reward
computation stuck in the driver would: task_runner/phase_marks.py). The paths hold no `:`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from medical_team.run.progress_record import PHASES, STARTUP
from medical_team.run.step_phases import PHASE_METHODS

HOLD_ENV = "MEDPLAY_INJECT_HOLD"
TRAINER_PHASES = tuple(phase for phase in PHASES if phase != STARTUP)
# A hold that nothing releases ends the phase with an error rather than leaving the run waiting for ever.
HOLD_LIMIT_S = 900.0
POLL_S = 0.2


@dataclass(frozen=True)
class PhaseHold:
    """Hold the `on_call`-th call of `phase` until `release` exists, having written `held`."""

    phase: str
    on_call: int
    held: Path
    release: Path

    def at_call(self, call: int) -> None:
        """Wait here if `call` (counted from 1 in this process) is the held one."""
        if call == self.on_call:
            wait_for(self.release, self.held, f"{self.phase}'s call {call}")


def asked_hold() -> PhaseHold | None:
    """The hold $MEDPLAY_INJECT_HOLD asks for, None when unset; a malformed value is a `ValueError` naming the form."""
    value = os.environ.get(HOLD_ENV, "")
    if not value:
        return None
    where, _, paths = value.partition(":")
    phase, _, on_call = where.partition("@")
    held, _, release = paths.partition(":")
    if phase not in (*PHASE_METHODS, *TRAINER_PHASES) or not on_call.isdigit() or not held or not release:
        raise ValueError(
            f"{HOLD_ENV}={value!r}: expected PHASE@N:HELD:RELEASE, PHASE one of "
            f"{', '.join((*PHASE_METHODS, *TRAINER_PHASES))}"
        )
    return PhaseHold(phase, int(on_call), Path(held), Path(release))


def wait_for(release: Path, held: Path, what: str) -> None:
    """Write `held`, then return once `release` exists (a `TimeoutError` after HOLD_LIMIT_S)."""
    held.parent.mkdir(parents=True, exist_ok=True)
    written = held.with_name(f".{held.name}.{os.getpid()}")
    written.write_text(f"{what} held until {release} exists (pid {os.getpid()})\n")
    written.replace(held)  # whole when it appears: a test reads it as soon as it exists
    deadline = time.monotonic() + HOLD_LIMIT_S
    while not release.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{HOLD_ENV}: {what} held for {HOLD_LIMIT_S:.0f} s and {release} never appeared")
        time.sleep(POLL_S)
