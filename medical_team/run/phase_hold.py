"""Tests only: the phase holds a test asks for, `MEDPLAY_INJECT_HOLD=PHASE@STEP:HELD:RELEASE[,...]`, read once for
both sides.

PHASE of step STEP writes the file HELD, then waits until the file RELEASE exists before it runs, so that a test acts
while the run provably sits in that step; once RELEASE exists the phase runs at once (a restarted run that does the
step again passes). PHASE is a worker method's phase (a key of PHASE_METHODS, run/step_phases.py: the plugin wraps
verl's method, plugin/step_hold.py, and reads the step from the run's progress record) or a phase the trainer marks in
the progress record (`TRAINER_PHASES`: it holds the trainer itself, in the task runner's process, as a reward
computation stuck in the driver would: task_runner/phase_marks.py). Several holds, comma-separated, let one run meet
one fault after another (tests/e2e/test_faults_cpu.py). The paths hold no `:` or `,`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from medical_team.run.progress_record import PHASES, STARTUP, progress_path, read_progress
from medical_team.run.run_key import this_run_folder
from medical_team.run.step_phases import PHASE_METHODS

HOLD_ENV = "MEDPLAY_INJECT_HOLD"
TRAINER_PHASES = tuple(phase for phase in PHASES if phase != STARTUP)
# A hold that nothing releases ends the phase with an error rather than leaving the run waiting for ever.
HOLD_LIMIT_S = 900.0
POLL_S = 0.2


@dataclass(frozen=True)
class PhaseHold:
    """Hold `phase` of step `step` until `release` exists, having written `held`."""

    phase: str
    step: int
    held: Path
    release: Path

    def at_step(self, step: int | None) -> None:
        """Wait here if `step` is the held one and the hold is not released yet."""
        if step == self.step and not self.release.exists():
            wait_for(self.release, self.held, f"{self.phase} of step {step}")


def asked_holds() -> tuple[PhaseHold, ...]:
    """The holds $MEDPLAY_INJECT_HOLD asks for (none when unset); a malformed one is a `ValueError` naming the form."""
    value = os.environ.get(HOLD_ENV, "")
    return tuple(_parsed(part) for part in value.split(",")) if value else ()


def _parsed(value: str) -> PhaseHold:
    where, _, paths = value.partition(":")
    phase, _, step = where.partition("@")
    held, _, release = paths.partition(":")
    if phase not in (*PHASE_METHODS, *TRAINER_PHASES) or not step.isdigit() or not held or not release:
        raise ValueError(
            f"{HOLD_ENV}={value!r}: expected PHASE@STEP:HELD:RELEASE[,...], PHASE one of "
            f"{', '.join((*PHASE_METHODS, *TRAINER_PHASES))}"
        )
    return PhaseHold(phase, int(step), Path(held), Path(release))


def run_step() -> int | None:
    """The step the run of this process is in, from its progress record (None outside a run or before the record)."""
    folder = this_run_folder()
    progress = read_progress(progress_path(folder)) if folder is not None else None
    return None if progress is None else progress.step


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
