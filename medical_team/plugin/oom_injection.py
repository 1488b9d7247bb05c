"""Tests only: the Ray worker that runs one phase of a step raises a real CUDA out-of-memory error.

`inject_in_this_process` runs when verl imports medplay's plugin (every_process.py); what `MEDPLAY_INJECT_OOM`
means, and the other processes it reaches, is in medical_team/run/oom_injection.py.
"""

from __future__ import annotations

import os

from medical_team.plugin.phase_calls import before_each_call
from medical_team.run.oom_injection import INJECT_ENV, INJECTED
from medical_team.run.step_phases import PHASE_METHODS


def inject_in_this_process() -> str | None:
    """Tests only: $MEDPLAY_INJECT_OOM=PHASE[@N] makes the N-th (default first) call of PHASE's verl method raise."""
    phase, _, on_call = os.environ.get(INJECT_ENV, "").partition("@")
    if phase not in PHASE_METHODS:
        return None
    import torch

    first = int(on_call or 1)

    def raise_from_the_nth(call: int) -> None:
        if call >= first:
            raise torch.OutOfMemoryError(f"{INJECTED} in {phase}")

    before_each_call(phase, raise_from_the_nth)
    return phase
