"""Every Ray process of a run: what verl imports through `VERL_USE_EXTERNAL_MODULES` as each of its processes starts.

configs/medplay.yaml names `medical_team.plugin.every_process` (the emulated card's memory cap, the tests'
out-of-memory injection) and the cpu-smoke profile `medical_team.plugin.cpu` before it (the `cpu` platform and
its patches). verl imports them in every Ray process as it imports itself: the task runner, the agent-loop workers,
the FSDP workers, the vLLM servers; the launcher imports no verl, and of these only the CPU runtime's `vllm` version
lookup (medical_team/launcher/environment.py). Nothing here registers medplay's trainer, estimator or
agent loops: those register in their own processes (medical_team/task_runner/, medical_team/agent_loop/).

Each module here patches or extends verl, so importing this package first checks that the installed verl is the
release they were written for (medical_team/run/verl_version.py).
"""

from medical_team.run.verl_version import check_verl_version

check_verl_version()
