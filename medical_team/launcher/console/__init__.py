"""What `medplay train` and `medplay sft` say on the terminal: `say` while the run's full output goes to its log
(console.py), and the complete lines appended to a file since the last read, how the console follows the run's log and
metrics (appended_lines.py)."""
