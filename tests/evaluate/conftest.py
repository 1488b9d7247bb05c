"""Shared fixtures of the evaluation tests: the real MEDEC test notes and a tiny local model."""

from pathlib import Path

import pytest

from medical_team.data.medec import TEST_CSV, bundled_csv, load_medec
from medical_team.data.records import MedecNote


@pytest.fixture(scope="session")
def test_notes() -> tuple[MedecNote, ...]:
    """The 597 notes of the bundled MEDEC-MS test file, read by the project's loader."""
    return load_medec(bundled_csv(TEST_CSV)).notes


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A random tiny Qwen3 model folder built by the product's builder (no download)."""
    from medical_team.models.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-qwen3")
