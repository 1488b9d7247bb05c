"""The verl worker method that runs one phase of a step, wrapped to act before or after each of its calls.

The heap trim (heap_trim.py) acts after each update of the actor; the tests' out-of-memory injection
(oom_injection.py) and step hold (step_hold.py) act before a phase's call. The methods are those named in
medical_team/run/step_phases.py (`PHASE_METHODS`), wrapped in the process that imports the plugin;
`functools.wraps` keeps verl's `@register` attributes, so verl still dispatches the wrapped method.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

from medical_team.run.step_phases import PHASE_METHODS


def phase_owner(phase: str) -> type:
    """The verl class whose method runs `phase`: the rollout's vLLM server, or the actor/rollout/ref worker."""
    if phase == "rollout":
        from verl.workers.rollout.vllm_rollout.vllm_async_server import vLLMHttpServer

        return vLLMHttpServer
    from verl.workers.engine_workers import ActorRolloutRefWorker

    return ActorRolloutRefWorker


def before_each_call(phase: str, act: Callable[[int], None]) -> None:
    """Make every call of `phase`'s verl method in this process run `act(the call's number, from 1)` first."""
    wrap_each_call(phase, act, after=False)


def after_each_call(phase: str, act: Callable[[int], None]) -> None:
    """Make every call of `phase`'s verl method in this process that returns run `act(the call's number)` last."""
    wrap_each_call(phase, act, after=True)


def wrap_each_call(phase: str, act: Callable[[int], None], *, after: bool) -> None:
    """Wrap `phase`'s verl method in this process so that each call runs `act(its number)` before or after it."""
    owner, name = phase_owner(phase), PHASE_METHODS[phase]
    method = getattr(owner, name)
    calls = 0

    def counted() -> int:
        nonlocal calls
        calls += 1
        return calls

    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def run_async(*args, **kwargs):
            call = counted()
            if not after:
                act(call)
            result = await method(*args, **kwargs)
            if after:
                act(call)
            return result

        setattr(owner, name, run_async)
        return

    @functools.wraps(method)
    def run(*args, **kwargs):
        call = counted()
        if not after:
            act(call)
        result = method(*args, **kwargs)
        if after:
            act(call)
        return result

    setattr(owner, name, run)
