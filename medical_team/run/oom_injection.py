"""Tests only: a real CUDA out-of-memory error in the process that runs one phase of a step, named once for all sides.

`MEDPLAY_INJECT_OOM=<phase>[@N]` (a phase of step_phases.py) makes the worker that runs that phase raise the real
`torch.OutOfMemoryError` at its N-th call (medical_team/plugin/oom_injection.py, run when verl imports medplay's
plugin; `judge_server`: the judge's server process raises it as it starts,
medical_team/judge_server/served_judge_exec.py). The launcher turns the error into its report
(medical_team/launcher/failures/out_of_memory.py).
"""

from __future__ import annotations

INJECT_ENV = "MEDPLAY_INJECT_OOM"
INJECTED = "CUDA out of memory. Tried to allocate 9.27 GiB (injected by MEDPLAY_INJECT_OOM for a test)"

JUDGE_SERVER = "judge_server"  # the phase of the served judge's own vLLM process
