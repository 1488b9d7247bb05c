"""Tests only: the Ray worker that runs one phase of a step raises a real CUDA out-of-memory error.

`inject_in_this_process` runs when verl imports medplay's plugin (every_process.py); what `MEDPLAY_INJECT_OOM`
means, and the other processes it reaches, is in medical_team/run/oom_injection.py.
"""

from __future__ import annotations

import functools
import inspect
import os

from medical_team.run.oom_injection import INJECT_ENV, INJECTED, PHASE_METHODS


def _raising(method, phase: str, on_call: int):
    """`method` whose `on_call`-th call in this process raises torch's out-of-memory error (attributes kept by `wraps`)."""
    import torch

    calls = 0

    def due() -> bool:
        nonlocal calls
        calls += 1
        return calls >= on_call

    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def run_async(*args, **kwargs):
            if due():
                raise torch.OutOfMemoryError(f"{INJECTED} in {phase}")
            return await method(*args, **kwargs)

        return run_async

    @functools.wraps(method)
    def run(*args, **kwargs):
        if due():
            raise torch.OutOfMemoryError(f"{INJECTED} in {phase}")
        return method(*args, **kwargs)

    return run


def inject_in_this_process() -> str | None:
    """Tests only: $MEDPLAY_INJECT_OOM=PHASE[@N] makes the N-th (default first) call of PHASE's verl method raise."""
    phase, _, on_call = os.environ.get(INJECT_ENV, "").partition("@")
    if phase not in PHASE_METHODS:
        return None
    if phase == "rollout":
        from verl.workers.rollout.vllm_rollout.vllm_async_server import vLLMHttpServer as owner
    else:
        from verl.workers.engine_workers import ActorRolloutRefWorker as owner
    method = PHASE_METHODS[phase]
    setattr(owner, method, _raising(getattr(owner, method), phase, int(on_call or 1)))
    return phase
