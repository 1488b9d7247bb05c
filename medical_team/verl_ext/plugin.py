"""What every verl process needs from medplay: the emulated card's memory cap, and the tests' out-of-memory injection.

verl imports it in every process when `VERL_USE_EXTERNAL_MODULES` names it
(`VERL_USE_EXTERNAL_MODULES=medical_team.verl_ext.plugin`); importing applies, in a worker that holds a GPU,
`medplay.emulate_gpu_gib`'s memory cap (medical_team/hardware/gpu_cap.py), and injects an out-of-memory error
where `MEDPLAY_INJECT_OOM` asks (tests only: medical_team/verl_ext/oom_injection.py). It registers nothing, so it
stays light in the processes that need none of medplay's pieces (the vLLM server and its worker, the FSDP workers):
the trainer and estimator register in the task runner's process (task_runner.py), the agent loops in the
agent-loop workers (agent_loop_manager.py).
"""

from medical_team.hardware.gpu_cap import cap_this_worker
from medical_team.verl_ext.oom_injection import inject_in_this_process

cap_this_worker()
inject_in_this_process()  # tests only: $MEDPLAY_INJECT_OOM
