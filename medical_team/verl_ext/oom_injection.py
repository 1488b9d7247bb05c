"""Tests only: a real CUDA out-of-memory error in the worker that runs one phase of a step.

`MEDPLAY_INJECT_OOM=<phase>[@N]` makes the worker that runs that phase raise the real `torch.OutOfMemoryError` at
its N-th call (`inject_in_this_process`, run when verl imports medplay's plugin; `judge_server`: the judge's server
process raises it as it starts, `inject_in_judge_server`, run by medical_team/launcher/served_judge_exec.py). The
launcher turns the error into its report (medical_team/launcher/out_of_memory.py).
"""

from __future__ import annotations

import functools
import inspect
import os

INJECT_ENV = "MEDPLAY_INJECT_OOM"
INJECTED = "CUDA out of memory. Tried to allocate 9.27 GiB (injected by MEDPLAY_INJECT_OOM for a test)"

JUDGE_SERVER = "judge_server"  # the phase of the served judge's own vLLM process
# The worker method (as it appears in the remote traceback) that runs each phase, in the order a step runs them.
PHASE_METHODS = {
    "rollout": "generate",
    "old_log_prob": "compute_log_prob",
    "ref": "compute_ref_log_prob",
    "update_actor": "update_actor",
}


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


def inject_in_judge_server() -> None:
    """Tests only: $MEDPLAY_INJECT_OOM=judge_server makes the judge's server process raise torch's error as it starts."""
    if os.environ.get(INJECT_ENV) == JUDGE_SERVER:
        from torch import OutOfMemoryError

        # The server's log shows this line in the traceback: it must not read as a fatal line (FATAL_LINES) itself.
        raise OutOfMemoryError(f"{INJECTED} in {JUDGE_SERVER}")
