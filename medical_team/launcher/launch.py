"""Compose medplay's Hydra config (configs/medplay.yaml + a profile) and run verl's own PPO trainer with it."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import DictConfig, OmegaConf, open_dict

from medical_team.checkpoint_folder import TRACKER_NAME, last_checkpoint
from medical_team.compile_cache import release_compile_cache
from medical_team.configs import PROFILE_GROUP
from medical_team.console import output_to_log, say
from medical_team.errors import UserInputError
from medical_team.launcher.startup import TrainerStages, stage
from medical_team.run_lock import hold_run_lock, release_run_lock

if TYPE_CHECKING:
    from medical_team.judge.settings import JudgeSettings
    from medical_team.launcher.run_plan import RunPlan
    from medical_team.run.settings import SelfPlaySettings

CONFIG_MODULE = "medical_team.configs"
CONFIG_NAME = "medplay"
# Config keys holding local paths; made absolute so every Ray worker reads the same files.
_PATH_KEYS = ("medplay.output_dir", "medplay.data_dir")


@dataclass(frozen=True)
class RunPaths:
    """Where a finished run left its outputs."""

    checkpoint_dir: Path
    metrics_file: Path
    latest_step_file: Path
    log_file: Path


@dataclass(frozen=True)
class PlannedRun:
    """A run's config as every step after planning reads it, its settings, and what was derived into it."""

    config: DictConfig  # composed, then the plan's values; `medplay:` read-only
    settings: SelfPlaySettings
    plan: RunPlan


def available_profiles() -> list[str]:
    """Names of the hardware profiles shipped in configs/profile/."""
    import importlib.resources

    folder = importlib.resources.files(CONFIG_MODULE) / PROFILE_GROUP
    return sorted(entry.name.removesuffix(".yaml") for entry in folder.iterdir() if entry.name.endswith(".yaml"))


# Overrides Hydra itself must check: a config group's choice, the SFT section (which no later check reads), Hydra's.
_HYDRA_CHECKED = (PROFILE_GROUP, "sft", "hydra")


def medplay_overrides(overrides: Sequence[str]) -> list[str]:
    """The overrides as `++KEY=V` (add or set), but for groups, `sft.` and `hydra.` keys and `~KEY` (delete).

    Hydra stops at the first key a plain `KEY=V` names that the config lacks, and refuses `+KEY=V` for one it
    has (every key of `medplay:` is in configs/medplay.yaml). The checks after composition see every key
    (`verl_keys.check_config`: a key verl does not define, with the closest one; the `medplay:` schema), so a
    run's mistakes are all named at once.
    """
    return [item if _hydra_checked(item) else "++" + item.lstrip("+") for item in overrides]


def _hydra_checked(override: str) -> bool:
    """True for an override left as written: `~KEY`, a group choice, an `sft.`/`hydra.` key."""
    key = override.split("=", 1)[0].lstrip("+")
    return override.startswith("~") or "=" not in override or key.split(".", 1)[0] in _HYDRA_CHECKED


def compose_raw(overrides: Sequence[str]) -> DictConfig:
    """configs/medplay.yaml with these Hydra overrides applied, paths and interpolations as written."""
    from hydra import compose, initialize_config_module
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        with initialize_config_module(config_module=CONFIG_MODULE, version_base=None):
            return compose(config_name=CONFIG_NAME, overrides=medplay_overrides(overrides))
    except (HydraException, OmegaConfBaseException) as error:
        raise UserInputError(f"{error} (profiles: {', '.join(available_profiles())})", field="overrides") from error


def compose_config(overrides: Sequence[str]) -> DictConfig:
    """The config a run uses for these overrides (e.g. `profile=24g`): local paths absolute, all resolved."""
    config = compose_raw(overrides)
    for key in _PATH_KEYS:
        value = OmegaConf.select(config, key)
        OmegaConf.update(config, key, str(Path(value).expanduser().resolve()))
    model_path = Path(config.medplay.model.path).expanduser()
    if config.medplay.model.build_tiny or model_path.exists():
        config.medplay.model.path = str(model_path.resolve())
    # verl rebuilds parts of the config (e.g. Ray's runtime_env) outside this tree: resolve interpolations now.
    OmegaConf.resolve(config)
    use_cache_folder(config)
    environment_as_text(config)
    return config


def use_cache_folder(config: DictConfig) -> None:
    """Resolve `medplay.cache_dir` and point vLLM's, torch.compile's and Triton's caches there in every process."""
    from medical_team.cache_folder import cache_dir, cache_environment

    folder = cache_dir(config.medplay.get("cache_dir"))
    with open_dict(config):
        config.medplay.cache_dir = str(folder)
        env_vars = config.ray_kwargs.ray_init.runtime_env.env_vars
        for variable, value in cache_environment(folder).items():
            env_vars.setdefault(variable, value)  # an explicit env_vars entry wins


def environment_as_text(config: DictConfig) -> None:
    """Make every value of the run's environment text, as Ray requires: Hydra reads `...env_vars.X=1` as a number."""
    env_vars = config.ray_kwargs.ray_init.runtime_env.env_vars
    with open_dict(config):
        for variable, value in list(env_vars.items()):
            env_vars[variable] = str(value)


def runtime_env_vars(config: DictConfig) -> dict[str, str]:
    """The environment the config asks for in the driver and every Ray worker."""
    env = OmegaConf.select(config, "ray_kwargs.ray_init.runtime_env.env_vars", default=None) or {}
    return {str(key): str(value) for key, value in OmegaConf.to_container(env, resolve=True).items()}


def apply_warning_filters(spec: str) -> None:
    """Install the filters of a PYTHONWARNINGS value in this process (new processes read the variable themselves)."""
    import builtins
    import re
    import warnings

    for entry in filter(None, (item.strip() for item in spec.split(","))):
        action, message, category, module = (entry.split(":") + [""] * 4)[:4]
        found = getattr(builtins, category, None) if category else Warning
        if not (isinstance(found, type) and issubclass(found, Warning)):
            continue  # as Python does with an invalid -W option
        warnings.filterwarnings(
            action or "default",
            message=re.escape(message),
            category=found,
            module=rf"{re.escape(module)}\Z" if module else "",
        )


def apply_environment(env: dict[str, str]) -> None:
    """Export the config's environment in this (driver) process and load verl external modules it names."""
    os.environ.update(env)
    apply_warning_filters(env.get("PYTHONWARNINGS", ""))
    modules = env.get("VERL_USE_EXTERNAL_MODULES", "")
    if modules:
        # verl's own import-time hook reads the variable only if verl was not imported yet: import them here too.
        from verl.utils.import_utils import import_external_libs

        import_external_libs(modules.split(","))


def check_data(data: DictConfig, section: str = "data") -> None:
    """Fail before anything starts when a parquet file of the data `section` (train_files, val_files) is missing."""
    for key in ("train_files", "val_files"):
        path = Path(data[key])
        if not path.is_file():
            raise UserInputError(
                f"not found; write it with `medplay convert --output {path.parent}` or set medplay.data_dir",
                file=str(path),
                field=f"{section}.{key}",
            )


def check_model(config: DictConfig) -> None:
    """Fail before Ray starts when a local model folder is missing (hub ids are left to the HF cache)."""
    model_path = Path(config.medplay.model.path)
    if model_path.is_absolute() and not (model_path / "config.json").is_file():
        raise UserInputError(
            "no Hugging Face model here; set medplay.model.path or medplay.model.build_tiny=true",
            file=str(model_path),
            field="medplay.model.path",
        )


def prepare_model(config: DictConfig) -> None:
    """Build the tiny model into medplay.model.path when the profile asks for it and it is missing."""
    model_path = Path(config.medplay.model.path)
    if config.medplay.model.build_tiny and not (model_path / "config.json").is_file():
        from medical_team.models.tiny import build_tiny_model

        build_tiny_model(model_path)
        say(f"medplay: built the tiny random model in {model_path}")


def save_config(config: DictConfig, path: Path) -> None:
    """Write `config` as YAML, the values of secret-named settings redacted (`redaction.py`)."""
    from medical_team.redaction import redacted

    OmegaConf.save(OmegaConf.create(redacted(OmegaConf.to_container(config))), path)


def record_run(config: DictConfig) -> None:
    """Write the composed config and what the run ran on (versions, image tag, git commit) into the output folder."""
    from medical_team.stack import run_record

    output = Path(config.medplay.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    # verl's file logger opens the metrics file without creating its folder.
    Path(config.medplay.metrics_file).parent.mkdir(parents=True, exist_ok=True)
    save_config(config, output / "config.yaml")
    (output / "versions.json").write_text(json.dumps(run_record(), indent=2) + "\n")


def prepare_checkpoints(config: DictConfig) -> None:
    """Point verl's tracker at the newest complete checkpoint and forget an old stop request."""
    from medical_team.reliability.checkpoints import repair_tracker
    from medical_team.reliability.stop_request import clear_stop_request

    checkpoint_dir = Path(config.trainer.default_local_dir)
    if config.trainer.resume_mode == "auto":
        repair = repair_tracker(checkpoint_dir, trust_unverified=config.medplay.trust_unverified_checkpoints)
        for line in repair.messages():
            say(f"medplay: {line}")
        if repair.resume_step is None and repair.unverified:
            raise UserInputError(
                f"global_step_{repair.unverified[-1]} has no manifest of its files (written by plain verl, an older "
                "medplay or elsewhere): resuming would unpickle its files, which can run code. If you trust it, "
                "rerun with medplay.trust_unverified_checkpoints=true; else move it away or use another output folder",
                file=str(checkpoint_dir),
            )
        if repair.resume_step is not None:
            say(f"medplay: resuming from {checkpoint_dir / f'global_step_{repair.resume_step}'}")
    clear_stop_request(checkpoint_dir)


def plan_run(overrides: Sequence[str], total_gib: float | None = None) -> PlannedRun:
    """Compose the config and plan the run (`plan_config`)."""
    return plan_config(compose_config(overrides), total_gib)


def plan_config(config: DictConfig, total_gib: float | None = None, claim_cache: bool = False) -> PlannedRun:
    """Check a composed config, derive the run plan (run_plan.py) and apply it, before anything starts.

    Every problem of the config at once: verl's part (keys it does not define, values medplay needs), then
    the `medplay:` section. `total_gib`: the card's memory (None: read through NVML on a GPU). `claim_cache`:
    this process runs the training and takes vLLM's compile cache for it when no other run holds it
    (medical_team/compile_cache.py).
    """
    from medical_team.compile_cache import COMPILE_CACHE_ENV, claim_compile_cache
    from medical_team.launcher.judge_run import check_judge
    from medical_team.launcher.run_plan import derive_run_plan, planned_config
    from medical_team.launcher.verl_keys import check_config
    from medical_team.run.settings import settings_from_trainer_config

    settings = check_config(config)
    check_judge(settings.judge)
    compile_cache = (
        claim_compile_cache(Path(config.medplay.cache_dir), runtime_env_vars(config).get(COMPILE_CACHE_ENV))
        if claim_cache and compiles(config, settings.judge)
        else None
    )
    plan = derive_run_plan(config, settings.judge, total_gib, compile_cache)
    planned = planned_config(config, plan)
    return PlannedRun(planned, settings_from_trainer_config(planned), plan)


def compiles(config: DictConfig, judge: JudgeSettings) -> bool:
    """Whether a vLLM engine of the run may compile: the rollout's unless eager, a served judge's unless eager."""
    from medical_team.judge_kinds import backend_kind

    served_judge_compiles = backend_kind(judge.backend).served_here and not judge.serve.enforce_eager
    return not config.actor_rollout_ref.rollout.enforce_eager or served_judge_compiles


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
    """verl's `main_ppo.main` body for an already composed config: device, validation, Ray, task runner.

    The console shows each startup stage as it begins and ends (medical_team/launcher/startup.py); the
    trainer's readiness is counted from `run_started` (when `medplay train` began) when given. `stuck`
    tells the SIGTERM handler why the step in progress cannot end (graceful_stop.py); `ray_cluster`
    says which cluster Ray starts or joins (the run plan's, which set ray_kwargs.ray_init for it).
    """
    import ray
    from verl.trainer.main_ppo import run_ppo
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config
    from verl.utils.device import auto_set_device

    from medical_team.launcher.dead_actors import ends_on_dead_actor
    from medical_team.launcher.graceful_stop import install_sigterm_handler
    from medical_team.launcher.ray_start import start_ray
    from medical_team.task_runner.task_runner import SelfPlayTaskRunner

    auto_set_device(config)
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    started_ray = not ray.is_initialized() and not os.environ.get("RAY_ADDRESS")
    try:
        with stage("Ray", f"({ray_cluster})"):
            if not ray.is_initialized():
                start_ray(config)  # run_ppo then skips its own ray.init
        stages = TrainerStages(log_file, run_started)
        # After ray.init, which replaces the SIGTERM handler with one that exits at once.
        install_sigterm_handler(Path(config.trainer.default_local_dir), stop_grace_s, stop_cannot_wait(stages, stuck))
        # An actor whose process dies ends the run naming it; the watch ends before Ray's normal teardown.
        with stages, ends_on_dead_actor(Path(config.medplay.metrics_file), Path(config.trainer.default_local_dir)):
            run_ppo(config, task_runner_class=SelfPlayTaskRunner)  # trainer.use_v1=false is refused by verl_problems
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
        return _train(composed, started, verbose)
    finally:
        release_compile_cache(Path(composed.medplay.cache_dir))
        for folder in folders:
            release_run_lock(folder)


def _train(composed: DictConfig, started: float, verbose: bool) -> RunPaths:
    """`train` once the run's folders are locked."""
    from medical_team.launcher.graceful_stop import stopped_while
    from medical_team.launcher.judge_context import check_judge_context
    from medical_team.launcher.judge_run import record_judge
    from medical_team.launcher.judge_wait_relay import JudgeWaitRelay
    from medical_team.launcher.model_info_warmup import model_info_warmed
    from medical_team.launcher.out_of_memory import out_of_memory
    from medical_team.launcher.progress import StepProgress
    from medical_team.launcher.prompt_lengths import check_prompt_lengths
    from medical_team.launcher.run_errors import end_run, failure_report
    from medical_team.launcher.served_judge import serve_judge
    from medical_team.launcher.shm_cleanup import remove_orphaned_segments, shm_segments
    from medical_team.reliability.stop_request import StoppedWhileWaitingError

    # Everything derived from this machine (KV cache bytes, the emulated card, the judge's address, Ray's
    # cluster), once: from here on the config is only read.
    run = plan_config(composed, claim_cache=True)
    config, settings = run.config, run.settings
    for line in run.plan.lines:
        say(f"medplay: {line}")
    check_data(config.data)
    paths = run_paths(config, run_log_path(config))
    say(f"medplay: full log: {paths.log_file}" + ("" if verbose else " (`medplay train --verbose` streams it)"))

    def give_up(error: BaseException) -> None:
        """End the process now with the line and status the main thread would have reached (served_judge)."""
        say(f"medplay: training failed; full log: {paths.log_file}")
        oom = out_of_memory(error, paths.log_file, paths.metrics_file, last_checkpoint(paths.checkpoint_dir))
        end_run(*failure_report(oom or error))

    try:
        with output_to_log(paths.log_file, stream=verbose):
            apply_environment(runtime_env_vars(config))
            prepare_model(config)
            check_model(config)
            # In the policy's and the judge's own tokens: before the judge's server and Ray start.
            check_prompt_lengths(config, settings)
            check_judge_context(config, settings)
            segments_before = shm_segments()
            try:
                # The rollout's model-class inspection beside the trainer's start (model_info_warmup.py); the
                # `vllm` judge's server, before Ray and stopped after it.
                with (
                    model_info_warmed(Path(config.actor_rollout_ref.model.path), paths.log_file),
                    serve_judge(config, settings.judge, give_up) as server,
                ):
                    record_run(config)
                    record_judge(config)
                    prepare_checkpoints(config)
                    with (
                        StepProgress(
                            paths.metrics_file, config.trainer.total_training_steps, monitors=settings.monitors
                        ),
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
