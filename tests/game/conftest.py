"""Fixtures of the game tests: a tiny random Qwen2 model saved once per session (tests/shared_fixtures.py has the Qwen3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from medical_team.models.tiny import TinyModelSpec, build_tiny_model


@pytest.fixture(scope="session")
def tiny_qwen2_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random tiny Qwen2 model with a byte-level BPE tokenizer and ChatML template."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny-qwen2"), TinyModelSpec(architecture="qwen2"))
