"""The `medplay train` process around verl's workers, and `medplay sft`'s in-process SFT job.

Here, the run itself: its steps in order (launch.py: lock the folders, plan, start the judge and Ray, run_verl), the
run its watchdog starts (watched_run.py), the run's environment in this process (environment.py), its data, model,
records and checkpoints prepared (preparation.py), Ray started (ray_start.py, with verl's runtime environment written
out: ppo_runtime_env.py), verl's task runner started and run as verl's `run_ppo` does (ppo_run.py: this process
imports no verl), vLLM's model-class inspection done ahead (model_info_warmup.py), the SIGTERM handler
(graceful_stop.py) and a child's process group stopped (process_group.py). Each other part of `medplay train` has a
sub-package of its own:

- config/: the config composed (compose.py), verl's part checked (verl_keys.py), a run's settings file (run_file.py);
- plan/: the run plan derived once before Ray (run_plan.py) with its GPUs (gpu_plan.py), memory inputs and KV caches
  (memory_inputs.py, kv_caches.py), the emulated card (card_emulation.py), the disk (disk_plan.py), the prompts'
  lengths (prompt_lengths.py) and the same plan on a host's GPUs for `medplay probe` (host_plan.py);
- judge/: the run's judge checked and recorded (judge_run.py), the served judge's context (judge_context.py) and
  the vLLM server it starts, watches and stops (served_judge.py, its plan, command and process modules);
- console/: what the run says on the terminal (console.py, appended_lines.py, startup.py, progress.py,
  judge_wait_relay.py, compile_lines.py);
- failures/: what ended a run, in one line and an exit status (run_errors.py, out_of_memory.py, dead_actors.py);
- sft/: `medplay sft`'s in-process SFT job (sft.py, sft_dataset.py).

Nothing here runs inside verl's Ray processes: the task runner's code is medical_team/task_runner/, the agent-loop
workers' medical_team/agent_loop/, and every Ray process imports medical_team/plugin/ (docs/architecture.md,
"Processes").
"""
