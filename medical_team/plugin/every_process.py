"""What every verl process needs from medplay: the emulated card's memory cap, the rollout engine's own environment
variables, the heap trim after each update, the weight-sync socket named after the run, and the tests' out-of-memory
injection and step hold.

verl imports it in every process when `VERL_USE_EXTERNAL_MODULES` names it
(`VERL_USE_EXTERNAL_MODULES=medical_team.plugin.every_process`); importing applies, in a worker that holds a GPU,
`medplay.emulate_gpu_gib`'s memory cap (gpu_cap.py), hands the rollout's vLLM server the variables meant for it
alone (rollout_env.py), makes each update of the actor end by returning the heap's freed pages to the system
(heap_trim.py, once verl's worker module is imported), names the socket that carries the synced weights after the
run, so that two runs on one host keep apart (weight_sync_socket.py), and injects an out-of-memory error where
`MEDPLAY_INJECT_OOM` asks and holds a phase's call where `MEDPLAY_INJECT_HOLD` asks (tests only: oom_injection.py,
step_hold.py). It registers nothing, so it stays light in the processes that need none of medplay's pieces (the
vLLM server and its worker, the FSDP workers): the trainer and estimator register in the task runner's process
(medical_team/task_runner/task_runner.py), the agent loops in the agent-loop workers
(medical_team/agent_loop/worker.py).
"""

from medical_team.plugin.gpu_cap import cap_this_worker
from medical_team.plugin.heap_trim import trim_after_each_update
from medical_team.plugin.oom_injection import inject_in_this_process
from medical_team.plugin.rollout_env import add_rollout_env
from medical_team.plugin.step_hold import hold_in_this_process
from medical_team.plugin.weight_sync_socket import key_weight_sync_sockets

cap_this_worker()
add_rollout_env()
trim_after_each_update()
key_weight_sync_sockets()
inject_in_this_process()  # tests only: $MEDPLAY_INJECT_OOM
hold_in_this_process()  # tests only: $MEDPLAY_INJECT_HOLD
