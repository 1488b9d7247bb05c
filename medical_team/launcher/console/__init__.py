"""What `medplay train` and `medplay sft` say on the terminal: `say` while the run's full output goes to its log
(console.py), the complete lines appended to a file since the last read, how the console follows the run's log and
metrics (appended_lines.py), the start-up stages (startup.py) and what torch.compile did in them (compile_lines.py),
one line per step (progress.py) and the agent-loop workers' judge waits (judge_wait_relay.py)."""
