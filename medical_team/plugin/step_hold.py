"""Tests only: one call of a step's phase waits for a file, so a test acts while the run provably sits in that step.

`MEDPLAY_INJECT_HOLD=PHASE@N:HELD:RELEASE` (for the run's Ray workers, as `MEDPLAY_INJECT_OOM` is: through
`+ray_kwargs.ray_init.runtime_env.env_vars`): in each worker that runs PHASE (a key of PHASE_METHODS,
medical_team/run/step_phases.py), the N-th call of its verl method writes the file HELD, then waits until the file
RELEASE exists before it runs. The image's stop test holds step 2's `update_actor` until the stop request appears
(tests/container/test_appliance_image.py), so the stop reaches the trainer during step 2 however short steps are.
The paths hold no `:`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from medical_team.plugin.phase_calls import before_each_call
from medical_team.run.step_phases import PHASE_METHODS

HOLD_ENV = "MEDPLAY_INJECT_HOLD"
# A hold that nothing releases ends the phase with an error rather than leaving the run waiting for ever.
HOLD_LIMIT_S = 900.0
POLL_S = 0.2


def hold_in_this_process() -> str | None:
    """Tests only: $MEDPLAY_INJECT_HOLD=PHASE@N:HELD:RELEASE holds the N-th call of PHASE's verl method; the phase."""
    value = os.environ.get(HOLD_ENV, "")
    if not value:
        return None
    where, _, paths = value.partition(":")
    phase, _, on_call = where.partition("@")
    held, _, release = paths.partition(":")
    if phase not in PHASE_METHODS or not on_call.isdigit() or not held or not release:
        raise ValueError(
            f"{HOLD_ENV}={value!r}: expected PHASE@N:HELD:RELEASE, PHASE one of {', '.join(PHASE_METHODS)}"
        )

    def hold(call: int) -> None:
        if call == int(on_call):
            wait_for(Path(release), Path(held), f"{phase}'s call {call}")

    before_each_call(phase, hold)
    return phase


def wait_for(release: Path, held: Path, what: str) -> None:
    """Write `held`, then return once `release` exists (a `TimeoutError` after HOLD_LIMIT_S)."""
    held.parent.mkdir(parents=True, exist_ok=True)
    held.write_text(f"{what} held until {release} exists (pid {os.getpid()})\n")
    deadline = time.monotonic() + HOLD_LIMIT_S
    while not release.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{HOLD_ENV}: {what} held for {HOLD_LIMIT_S:.0f} s and {release} never appeared")
        time.sleep(POLL_S)
