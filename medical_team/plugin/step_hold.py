"""Tests only: the held calls of a worker's verl methods that `MEDPLAY_INJECT_HOLD` asks for (run/phase_hold.py).

`MEDPLAY_INJECT_HOLD=PHASE@STEP:HELD:RELEASE[,...]` reaches the run's Ray workers as `MEDPLAY_INJECT_OOM` does
(through `+ray_kwargs.ray_init.runtime_env.env_vars`); in each worker that runs PHASE (a key of PHASE_METHODS,
medical_team/run/step_phases.py) the calls of its verl method made while the run's progress record says step STEP
wait. The image's stop test holds step 2's `update_actor` until the stop request appears
(tests/container/test_appliance_image.py), so the stop reaches the trainer during step 2 however short steps are. A
hold of a phase the trainer marks is the trainer's own (task_runner/phase_marks.py).
"""

from __future__ import annotations

from medical_team.plugin.phase_calls import before_each_call
from medical_team.run.phase_hold import asked_holds, run_step
from medical_team.run.step_phases import PHASE_METHODS


def hold_in_this_process() -> tuple[str, ...]:
    """Tests only: wrap the held worker methods $MEDPLAY_INJECT_HOLD names; their phases (none when it names none)."""
    held = tuple(hold for hold in asked_holds() if hold.phase in PHASE_METHODS)
    for hold in held:
        before_each_call(hold.phase, lambda _call, hold=hold: hold.at_step(run_step()))
    return tuple(hold.phase for hold in held)
