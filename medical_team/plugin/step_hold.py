"""Tests only: the held call of a worker's verl method that `MEDPLAY_INJECT_HOLD` asks for (run/phase_hold.py).

`MEDPLAY_INJECT_HOLD=PHASE@N:HELD:RELEASE` reaches the run's Ray workers as `MEDPLAY_INJECT_OOM` does (through
`+ray_kwargs.ray_init.runtime_env.env_vars`); in each worker that runs PHASE (a key of PHASE_METHODS,
medical_team/run/step_phases.py) the N-th call of its verl method waits. The image's stop test holds step 2's
`update_actor` until the stop request appears (tests/container/test_appliance_image.py), so the stop reaches the
trainer during step 2 however short steps are. A hold of a phase the trainer marks is the trainer's own
(task_runner/phase_marks.py).
"""

from __future__ import annotations

from medical_team.plugin.phase_calls import before_each_call
from medical_team.run.phase_hold import asked_hold
from medical_team.run.step_phases import PHASE_METHODS


def hold_in_this_process() -> str | None:
    """Tests only: wrap the held worker method $MEDPLAY_INJECT_HOLD names; its phase, None when it names none."""
    hold = asked_hold()
    if hold is None or hold.phase not in PHASE_METHODS:
        return None
    before_each_call(hold.phase, hold.at_call)
    return hold.phase
