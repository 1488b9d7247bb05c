"""`medplay train`'s judge: what a run says about it and records (judge_run.py), the served judge's context against
the longest request the run can send (judge_context.py), and the `vllm` backend's server that the run starts, watches
and stops (served_judge.py; its place in the run plan, served_judge_plan.py; its command line,
served_judge_command.py; its process, served_judge_process.py). The judge itself is medical_team/judge/."""
