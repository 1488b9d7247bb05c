"""The `medplay train` process around verl's workers, and `medplay sft`'s in-process SFT job.

Compose and check the config (launch.py, verl_keys.py), derive the run plan once before Ray (run_plan.py:
KV caches in bytes, the emulated card, the served judge's address, Ray's cluster), start and watch the judge's
vLLM server (served_judge.py), start Ray and verl's task runner (ray_start.py, launch.run_verl), say the start-up
stages, the steps and the judge waits on the console (startup.py, progress.py, judge_wait_relay.py), and turn
what ended a run into one line and an exit status (run_errors.py, out_of_memory.py). Nothing here runs inside
verl's Ray processes: the task runner's code is medical_team/task_runner/, the agent-loop workers'
medical_team/agent_loop/, and every Ray process imports medical_team/plugin/ (docs/architecture.md, "Processes").
"""
