"""Fixtures the test folders share (tests/conftest.py loads them): a tiny local model, verl's composed trainer
config, a private Ray cluster with TransferQueue, the bundled MEDEC notes and seeds, servers on loopback ports."""

from __future__ import annotations

import copy
import dataclasses
import importlib.resources
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from composed_configs import MEDPLAY_SECTION, composed_config
from fastapi import FastAPI
from omegaconf import DictConfig

from medical_team.common.vocab import Category
from medical_team.data.medec import TEST_CSV, VALIDATION_CSV, bundled_csv, load_medec
from medical_team.data.records import GameSeed, MedecNote
from medical_team.data.seeds import benign_seed, harmful_seed
from medical_team.judge_server.serving import BackgroundServer


@pytest.fixture()
def medplay_section() -> dict[str, Any]:
    """A fresh copy of the `medplay:` section the tests train with (the defaults of configs/medplay.yaml)."""
    return copy.deepcopy(MEDPLAY_SECTION)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Qwen3 with a locally trained tokenizer (built offline, once per session)."""
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
    return Path(str(resource / VALIDATION_CSV))


@pytest.fixture(scope="session")
def test_notes() -> tuple[MedecNote, ...]:
    """The 597 notes of the bundled MEDEC-MS test file, read by the project's loader."""
    return load_medec(bundled_csv(TEST_CSV)).notes


@pytest.fixture(scope="session")
def seed_pairs() -> list[tuple[GameSeed, GameSeed]]:
    """(adversarial_harmful, adversarial_benign) seeds of the first 20 error notes of the real validation file."""
    notes = [note for note in load_medec(bundled_csv(VALIDATION_CSV)).notes if note.error_flag][:20]
    return [
        (
            dataclasses.replace(harmful_seed(note), category=Category.ADVERSARIAL_HARMFUL),
            dataclasses.replace(benign_seed(note), category=Category.ADVERSARIAL_BENIGN),
        )
        for note in notes
    ]


@pytest.fixture(scope="session")
def harmful(seed_pairs: list[tuple[GameSeed, GameSeed]]) -> GameSeed:
    """One adversarial_harmful seed."""
    return seed_pairs[0][0]


@pytest.fixture(scope="session")
def benign(seed_pairs: list[tuple[GameSeed, GameSeed]]) -> GameSeed:
    """One adversarial_benign seed (the corrected version of `harmful`)."""
    return seed_pairs[0][1]


@pytest.fixture
def serve() -> Iterator[Callable[[FastAPI], BackgroundServer]]:
    """Start FastAPI apps on free loopback ports with real uvicorn; all are stopped at teardown."""
    servers: list[BackgroundServer] = []

    def start(app: FastAPI) -> BackgroundServer:
        server = BackgroundServer(app).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
