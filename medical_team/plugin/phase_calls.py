"""Tests only: the verl worker method that runs one phase of a step, wrapped to act first at each of its calls.

The out-of-memory injection (oom_injection.py) and the step hold (step_hold.py) wrap the methods named in
medical_team/run/oom_injection.py (`PHASE_METHODS`) in the process that imports the plugin; `functools.wraps` keeps
verl's `@register` attributes, so verl still dispatches the wrapped method.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

from medical_team.run.oom_injection import PHASE_METHODS


def phase_owner(phase: str) -> type:
    """The verl class whose method runs `phase`: the rollout's vLLM server, or the actor/rollout/ref worker."""
    if phase == "rollout":
        from verl.workers.rollout.vllm_rollout.vllm_async_server import vLLMHttpServer

        return vLLMHttpServer
    from verl.workers.engine_workers import ActorRolloutRefWorker

    return ActorRolloutRefWorker


def before_each_call(phase: str, act: Callable[[int], None]) -> None:
    """Make every call of `phase`'s verl method in this process run `act(the call's number, from 1)` first."""
    owner, name = phase_owner(phase), PHASE_METHODS[phase]
    method = getattr(owner, name)
    calls = 0

    def counted() -> None:
        nonlocal calls
        calls += 1
        act(calls)

    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def run_async(*args, **kwargs):
            counted()
            return await method(*args, **kwargs)

        setattr(owner, name, run_async)
        return

    @functools.wraps(method)
    def run(*args, **kwargs):
        counted()
        return method(*args, **kwargs)

    setattr(owner, name, run)
