"""Shared fixtures: a tiny local model, verl's composed trainer config, a private Ray cluster with TransferQueue."""

from __future__ import annotations

import copy
import importlib.resources
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig, OmegaConf, open_dict

from medical_team.configs import packaged_section

# configs/medplay.yaml's `medplay:` section, with the model-free judge.
MEDPLAY_SECTION: dict[str, Any] = copy.deepcopy(packaged_section())
MEDPLAY_SECTION["judge"]["backend"] = "rules"


@pytest.fixture()
def medplay_section() -> dict[str, Any]:
    """A fresh copy of the `medplay:` section the tests train with (the defaults of configs/medplay.yaml)."""
    return copy.deepcopy(MEDPLAY_SECTION)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Qwen3 with a locally trained tokenizer (built offline)."""
    from medical_team.models.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session")
def trainer_config(tiny_model_dir: Path) -> DictConfig:
    """verl's ppo_trainer config with the self-play pieces selected, as `medplay train` composes it."""
    overrides = [
        f"actor_rollout_ref.model.path={tiny_model_dir}",
        "actor_rollout_ref.rollout.name=vllm",
        "actor_rollout_ref.rollout.prompt_length=2048",
        "actor_rollout_ref.rollout.response_length=1024",
        "actor_rollout_ref.actor.ppo_mini_batch_size=2",
        "algorithm.adv_estimator=reinforce_plus_plus_per_role",
        "algorithm.use_kl_in_reward=false",
        "actor_rollout_ref.actor.use_kl_loss=true",
        "actor_rollout_ref.actor.kl_loss_coef=0.01",
        "data.train_batch_size=4",
        "trainer.v1.trainer_mode=medplay_sync",
        "transfer_queue.backend.SimpleStorage.num_data_storage_units=1",
    ]
    return composed_config(overrides)


def composed_config(overrides: list[str]) -> DictConfig:
    """verl's `ppo_trainer` config composed with `overrides`, and medplay's section."""
    from hydra import compose, initialize_config_module

    with initialize_config_module("verl.trainer.config", version_base=None):
        config = compose("ppo_trainer", overrides=overrides)
    with open_dict(config):
        config.medplay = OmegaConf.create(MEDPLAY_SECTION)
    return config


@pytest.fixture(scope="session")
def transfer_queue(trainer_config: DictConfig) -> Iterator[None]:
    """A private local Ray cluster (never one another process started) with TransferQueue running."""
    import ray
    import transfer_queue as tq

    # register the agent loops, the estimator and the trainer, as the task runner's `run` does in its process
    from medical_team.agent_loop import agent_loop  # noqa: F401
    from medical_team.task_runner import advantage, trainer  # noqa: F401

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    tq.init(trainer_config.transfer_queue)
    yield
    tq.close()
    ray.shutdown()


@pytest.fixture(scope="session")
def medec_csv() -> Path:
    """The bundled MEDEC-MS validation file."""
    resource = importlib.resources.files("medical_team.data.resources")
    return Path(str(resource / "MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"))
