"""`medplay train`: lock the run's folders, plan the run, start its judge and Ray, and run verl's own PPO trainer.

Composing the config is compose.py's job, checking and planning it run_plan.py's, preparing the run's inputs
and folder preparation.py's; this module runs the steps in order and turns a failure into what the console says.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import DictConfig

from medical_team.caches.compile_cache import release_compile_cache
from medical_team.common.errors import UserInputError
from medical_team.launcher.config.compose import compose_config, named_keys
from medical_team.launcher.console.console import output_to_log, say
from medical_team.launcher.console.startup import TrainerStages, stage
from medical_team.run_folder.checkpoint_folder import TRACKER_NAME, last_checkpoint, read_tracker
from medical_team.run_folder.run_lock import hold_run_lock, release_run_lock

if TYPE_CHECKING:
    from medical_team.launcher.plan.run_plan import PlannedRun

@dataclass(frozen=True)
class RunPaths:
    """Where a finished run left its outputs."""

    checkpoint_dir: Path
    metrics_file: Path
    latest_step_file: Path
    log_file: Path


def locked_folders(config: DictConfig) -> list[Path]:
    """The folders one run owns: the output folder, and the checkpoint folder when it lies outside it."""
    output, checkpoints = Path(config.medplay.output_dir), Path(config.trainer.default_local_dir)
    return [output] if checkpoints.is_relative_to(output) else [output, checkpoints]


def run_log_path(config: DictConfig) -> Path:
    """A new file for this run's full output: <medplay.output_dir>/logs/train-<UTC time>.log."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return Path(config.medplay.output_dir) / "logs" / f"train-{stamp}.log"


def run_paths(config: DictConfig, log_file: Path) -> RunPaths:
    """Checkpoint folder, metrics file and verl's tracker file of this config, and the run's log."""
    checkpoint_dir = Path(config.trainer.default_local_dir)
    return RunPaths(
        checkpoint_dir=checkpoint_dir,
        metrics_file=Path(config.medplay.metrics_file),
        latest_step_file=checkpoint_dir / TRACKER_NAME,
        log_file=log_file,
    )


def run_verl(
    config: DictConfig,
    ray_cluster: str,
    stop_grace_s: float,
    log_file: Path,
    run_started: float | None = None,
    stuck: Callable[[], str | None] = lambda: None,
) -> None:
    """verl's `main_ppo.main` body for an already composed config, without importing verl in this process: Ray, then
    verl's task runner, whose actor sets the device and validates the config before its run (ppo_run.py).

    The console shows each startup stage as it begins and ends (medical_team/launcher/console/startup.py); the
    trainer's readiness is counted from `run_started` (when `medplay train` began) when given. `stuck`
    tells the SIGTERM handler why the step in progress cannot end (graceful_stop.py); `ray_cluster`
    says which cluster Ray starts or joins (the run plan's, which set ray_kwargs.ray_init for it).
    """
    import ray

    from medical_team.launcher.failures.dead_actors import ends_on_dead_actor
    from medical_team.launcher.graceful_stop import install_sigterm_handler
    from medical_team.launcher.ppo_run import run_task_runner
    from medical_team.launcher.ray_start import start_ray

    started_ray = not ray.is_initialized() and not os.environ.get("RAY_ADDRESS")
    try:
        with stage("Ray", f"({ray_cluster})"):
            start_ray(config)
        stages = TrainerStages(log_file, run_started)
        # After ray.init, which replaces the SIGTERM handler with one that exits at once.
        install_sigterm_handler(Path(config.trainer.default_local_dir), stop_grace_s, stop_cannot_wait(stages, stuck))
        # An actor whose process dies ends the run naming it; the watch ends before Ray's normal teardown.
        with stages, ends_on_dead_actor(Path(config.medplay.metrics_file), Path(config.trainer.default_local_dir)):
            run_task_runner(config)  # the V1 task runner only: trainer.use_v1=false is refused by verl_problems
    finally:
        if started_ray:
            ray.shutdown()


def stop_cannot_wait(stages: TrainerStages, stuck: Callable[[], str | None]) -> Callable[[], str | None]:
    """Why a stop request cannot wait for a step to end: the trainer still starting (no step to save), or `stuck`."""

    def reason() -> str | None:
        starting = stages.starting()
        if starting is not None:
            return f"verl's trainer was still starting ({starting}), with no step to save"
        return stuck()

    return reason


def train(overrides: Sequence[str], *, verbose: bool = False) -> RunPaths:
    """Compose the config, prepare inputs, train with verl, and return where the outputs are.

    The run's full output goes to a log file in the run folder (also to the terminal with `verbose`);
    the terminal gets the stages and one line per step. The run's folders are locked while it lasts.
    """
    started = time.monotonic()
    composed = compose_config(overrides)
    # One run per output folder: before anything is checked, written into it (the log, the stop request, the
    # judge's log) or started.
    folders = locked_folders(composed)
    for folder in folders:
        hold_run_lock(folder)
    try:
        return _train(composed, named_keys(overrides), started, verbose)
    finally:
        release_compile_cache(Path(composed.medplay.cache_dir))
        for folder in folders:
            release_run_lock(folder)


def _train(composed: DictConfig, named: frozenset[str], started: float, verbose: bool) -> RunPaths:
    """`train` once the run's folders are locked: plan (`named`: the keys the overrides set), check the inputs, then
    train beside the judge."""
    from medical_team.launcher.environment import apply_environment, runtime_env_vars
    from medical_team.launcher.failures.out_of_memory import out_of_memory
    from medical_team.launcher.judge.judge_context import check_judge_context
    from medical_team.launcher.plan.disk_plan import check_disk
    from medical_team.launcher.plan.prompt_lengths import check_prompt_lengths
    from medical_team.launcher.plan.run_plan import plan_config
    from medical_team.launcher.preparation import check_data, check_model, prepare_model
    from medical_team.run.shm_segments import remove_orphaned_segments, shm_segments

    # Everything derived from this machine (KV cache bytes, the emulated card, the judge's address, Ray's
    # cluster), once: from here on the config is only read.
    run = plan_config(composed, claim_cache=True, named=named)
    config = run.config
    for line in run.plan.lines:
        say(f"medplay: {line}")
    check_data(config.data)
    paths = run_paths(config, run_log_path(config))
    say(f"medplay: full log: {paths.log_file}" + ("" if verbose else " (`medplay train --verbose` streams it)"))
    try:
        with output_to_log(paths.log_file, stream=verbose):
            apply_environment(runtime_env_vars(config))
            prepare_model(config)
            check_model(config)
            # The saves and records against each volume's free space, from the model now that it is here.
            say(f"medplay: {check_disk(config)}")
            # In the policy's and the judge's own tokens: before the judge's server and Ray start.
            check_prompt_lengths(config, run.settings)
            check_judge_context(config, run.settings)
            mark_start_up(config)
            segments_before = shm_segments()
            try:
                _train_beside_judge(run, paths, started)
            finally:
                remove_orphaned_segments(segments_before)
    except UserInputError:
        raise
    except Exception as error:
        say(f"medplay: training failed; full log: {paths.log_file}")
        oom = out_of_memory(error, paths.log_file, paths.metrics_file, last_checkpoint(paths.checkpoint_dir))
        if oom is not None:
            raise oom from error
        raise
    return paths


def mark_start_up(config: DictConfig) -> None:
    """Begin this attempt's progress record: its start-up, from the step it resumes after (docs/reliability.md)."""
    from medical_team.launcher.watched_run import attempt_number
    from medical_team.run.progress_record import STARTUP, ProgressWriter, progress_path

    resumes_after = read_tracker(Path(config.trainer.default_local_dir)) or 0
    ProgressWriter(progress_path(config.medplay.output_dir), attempt=attempt_number()).enter(STARTUP, resumes_after)


def _train_beside_judge(run: PlannedRun, paths: RunPaths, started: float) -> None:
    """Start the judge's server (the `vllm` backend), record the run, and train; a stop while waiting says so."""
    from medical_team.launcher.console.judge_wait_relay import JudgeWaitRelay
    from medical_team.launcher.console.progress import StepProgress
    from medical_team.launcher.graceful_stop import stopped_while
    from medical_team.launcher.judge.judge_run import record_judge
    from medical_team.launcher.judge.served_judge import serve_judge
    from medical_team.launcher.model_info_warmup import model_info_warmed
    from medical_team.launcher.preparation import prepare_checkpoints, record_run
    from medical_team.reliability.stop_request import StoppedWhileWaitingError

    config, settings = run.config, run.settings
    try:
        # The rollout's model-class inspection beside the trainer's start (model_info_warmup.py); the `vllm`
        # judge's server, before Ray and stopped after it.
        with (
            model_info_warmed(Path(config.actor_rollout_ref.model.path), paths.log_file),
            serve_judge(run, _give_up(paths)) as server,
        ):
            record_run(config)
            record_judge(config)
            prepare_checkpoints(config)
            with (
                StepProgress(paths.metrics_file, config.trainer.total_training_steps, monitors=settings.monitors),
                JudgeWaitRelay(paths.log_file) as waits,
            ):

                def stuck() -> str | None:
                    if server is not None and not server.ready.is_set():
                        return "the judge's server had not answered yet"
                    return waits.waiting()

                run_verl(config, run.plan.ray_cluster, settings.stop_grace_s, paths.log_file, started, stuck)
    except KeyboardInterrupt:
        if not stopped_while:
            raise
        kept = last_checkpoint(paths.checkpoint_dir)
        kept = f"the last checkpoint is intact: {kept}" if kept else "no checkpoint was saved yet"
        raise StoppedWhileWaitingError(f"{stopped_while[0]}; {kept}") from None


def _give_up(paths: RunPaths) -> Callable[[BaseException], None]:
    """What ends the process when the judge's server failed and the main thread did not unwind (served_judge)."""
    from medical_team.launcher.failures.out_of_memory import out_of_memory
    from medical_team.launcher.failures.run_errors import end_run, failure_report

    def give_up(error: BaseException) -> None:
        """End the process now with the line and status the main thread would have reached."""
        say(f"medplay: training failed; full log: {paths.log_file}")
        oom = out_of_memory(error, paths.log_file, paths.metrics_file, last_checkpoint(paths.checkpoint_dir))
        end_run(*failure_report(oom or error))

    return give_up
