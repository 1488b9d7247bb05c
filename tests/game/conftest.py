"""Fixtures of the game tests: tiny random Hugging Face models saved once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from medical_team.models.tiny import TinyModelSpec, build_tiny_model


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random tiny Qwen2 model with a byte-level BPE tokenizer and ChatML template."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny-qwen2"), TinyModelSpec(architecture="qwen2"))


@pytest.fixture(scope="session")
def tiny_qwen3_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random tiny Qwen3 model with the same tokenizer."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny-qwen3"))
