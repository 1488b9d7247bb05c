"""Shared fixtures of the model-preparation tests."""

import pytest

from medical_team.data.medec import VALIDATION_CSV, bundled_csv, load_medec


@pytest.fixture(scope="session")
def notes() -> list[str]:
    """Texts of the bundled MEDEC-MS validation notes (tokenizer corpus and inputs)."""
    return [note.text for note in load_medec(bundled_csv(VALIDATION_CSV)).notes]
