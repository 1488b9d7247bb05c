"""Shared fixtures of the judge tests: real MEDEC seeds, judge requests, and servers on loopback ports."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
from fastapi import FastAPI

from medical_team.data.medec import bundled_csv, load_medec
from medical_team.data.records import GameSeed
from medical_team.data.seeds import benign_seed, harmful_seed
from medical_team.judge_server.serving import BackgroundServer
from medical_team.vocab import Category

VALIDATION_CSV = "MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"


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
def serve() -> Iterator:
    """Start FastAPI apps on free loopback ports with real uvicorn; all are stopped at teardown."""
    servers: list[BackgroundServer] = []

    def start(app: FastAPI) -> BackgroundServer:
        server = BackgroundServer(app).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
