"""The watchdog's process: `medplay train` watching the run it starts, so that a run that stops moving is seen.

supervisor.py runs the attempts and restarts them (medical_team/run/stall_limits.py says when a phase is a stall);
hang_record.py writes what a stall leaves (`<output>/hangs/<UTC time>/`); run_processes.py finds and stops an attempt's
processes. It imports no verl, Ray or vLLM: a hung trainer, a held GIL or a stopped worker cannot hold it
(docs/reliability.md, "A run that stops moving").
"""
