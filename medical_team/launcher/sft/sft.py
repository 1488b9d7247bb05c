"""The format warm start: compose `sft:` onto medplay's training config and run verl's own SFT trainer.

`medplay sft [profile=NAME] [overrides]` runs verl's `SFTTrainer` (FSDP engine; the `cpu` platform
in the cpu-smoke profile) in this process as a one-rank job, then copies the last checkpoint's
Hugging Face folder to `<medplay.output_dir>/sft/model`, which `medplay train` and `medplay eval` load.
"""

from __future__ import annotations

import importlib.resources
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig

from medical_team.common.errors import UserInputError
from medical_team.configs import PROFILE_GROUP
from medical_team.launcher.config.compose import CONFIG_MODULE, compose_config
from medical_team.launcher.environment import apply_environment, runtime_env_vars
from medical_team.launcher.preparation import check_data, check_model, prepare_model, save_config
from medical_team.run.port_claim import hold_port
from medical_team.run.verl_version import check_verl_version
from medical_team.run_folder.checkpoint_folder import last_checkpoint
from medical_team.run_folder.run_lock import hold_run_lock, release_run_lock

SFT_GROUP = "sft"
BASE_SFT = "base"
# Inside medplay.output_dir: the exported model and the SFT metrics (JSON lines, one record per step).
MODEL_SUBDIR = "sft/model"
METRICS_FILE = "sft/metrics.jsonl"


@dataclass(frozen=True)
class SftPaths:
    """Where a finished SFT run left its outputs."""

    model_dir: Path
    metrics_file: Path
    checkpoint_dir: Path


def profile_choice(overrides: Sequence[str]) -> str:
    """The `profile=` value among the overrides (the CLI always adds one)."""
    for item in overrides:
        key, _, value = item.partition("=")
        if key.lstrip("+~") == PROFILE_GROUP:
            return value
    raise UserInputError("no profile given", field="profile")


def sft_option(profile: str) -> str:
    """configs/sft/<profile>.yaml when it exists, else configs/sft/base.yaml."""
    folder = importlib.resources.files(CONFIG_MODULE) / SFT_GROUP
    return profile if (folder / f"{profile}.yaml").is_file() else BASE_SFT


def compose_sft_config(overrides: Sequence[str]) -> DictConfig:
    """medplay.yaml + the profile + configs/sft/<profile or base>.yaml under `sft:`, resolved, paths absolute."""
    option = sft_option(profile_choice(overrides))
    # The group is appended first so that `sft.*` overrides apply to it.
    return compose_config([f"+{SFT_GROUP}={option}", *overrides])


def sft_paths(config: DictConfig) -> SftPaths:
    """Exported model folder, metrics file and checkpoint folder of this config."""
    output = Path(config.medplay.output_dir)
    return SftPaths(output / MODEL_SUBDIR, output / METRICS_FILE, Path(config.sft.trainer.default_local_dir))


def run_sft_trainer(sft_config: DictConfig) -> None:
    """verl's `run_sft` for one rank in this process; the process group comes from verl's Ray helper.

    verl's `initialize_global_process_group` builds `cpu:gloo,<device>:<backend>`, which torch rejects on
    the `cpu` platform; the Ray variant is the one the CPU runtime already patches to plain gloo.
    """
    check_verl_version()
    import torch.distributed
    from verl.trainer.sft_trainer import SFTTrainer
    from verl.utils.distributed import destroy_global_process_group, initialize_global_process_group_ray

    for key, value in {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"}.items():
        os.environ.setdefault(key, value)
    os.environ.setdefault("MASTER_PORT", str(hold_port("SFT's process group")))
    if not torch.distributed.is_initialized():
        initialize_global_process_group_ray()
    try:
        SFTTrainer(config=sft_config).fit()
    finally:
        destroy_global_process_group()


def latest_hf_folder(checkpoint_dir: Path) -> Path:
    """The Hugging Face folder of the newest checkpoint verl's tracker names."""
    latest = last_checkpoint(checkpoint_dir)
    if latest is None:
        raise UserInputError("no checkpoint was written", file=str(checkpoint_dir))
    folder = Path(latest) / "huggingface"
    if not (folder / "config.json").is_file():
        raise UserInputError(
            "the checkpoint has no Hugging Face weights (sft.checkpoint.save_contents)", file=str(folder)
        )
    return folder


def export_model(checkpoint_dir: Path, model_dir: Path) -> Path:
    """Copy the newest checkpoint's Hugging Face folder (weights, config, tokenizer) to `model_dir`."""
    source = latest_hf_folder(checkpoint_dir)
    if model_dir.exists():
        shutil.rmtree(model_dir)
    shutil.copytree(source, model_dir)
    return model_dir


def sft(overrides: Sequence[str]) -> SftPaths:
    """Compose the config, prepare the model, run verl's SFT trainer, export the model; return where it all is."""
    config = compose_sft_config(overrides)
    folder = Path(config.medplay.output_dir)
    hold_run_lock(folder)  # before anything is written into the output folder
    try:
        return _sft(config)
    finally:
        release_run_lock(folder)


def _sft(config: DictConfig) -> SftPaths:
    """`sft` once the output folder is locked."""
    check_data(config.sft.data, "sft.data")
    paths = sft_paths(config)
    env = runtime_env_vars(config)
    env["VERL_FILE_LOGGER_PATH"] = str(paths.metrics_file)
    apply_environment(env)
    prepare_model(config)
    check_model(config)
    paths.metrics_file.parent.mkdir(parents=True, exist_ok=True)
    save_config(config.sft, paths.metrics_file.parent / "config.yaml")
    run_sft_trainer(config.sft)
    export_model(paths.checkpoint_dir, paths.model_dir)
    return paths
