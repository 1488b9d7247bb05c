"""verl's task runner, a Ray actor: medplay's trainer, its advantage estimator and agent-loop manager run here.

The launcher starts `actor.SelfPlayTaskRunner` (verl is imported in its process, never in the launcher's); there it
checks the config as verl's `main_ppo` does (task_runner.py: `checked_config`), registers the `medplay_sync` trainer
(trainer.py) and the per-role estimator (advantage.py) and runs verl's V1 loop, whose agent-loop manager
(agent_loop_manager.py) starts the agent-loop workers (medical_team/agent_loop/). The trainer's reliability hooks live
here too: appended metrics (metrics_file.py), the step's game records (game_records_file.py), the stop request
honoured (graceful_stop.py), the per-step resource record and its floors (resource_record.py), the LoRA export
(lora_export.py).
"""
