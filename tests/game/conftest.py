"""Fixtures of the game tests: a tiny random Hugging Face model saved once per session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# verl installs a top-level `tests` package that shadows ours, so reach tests/tiny.py by module name.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tiny import build_tiny_model


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random tiny Qwen2 model with a byte-level BPE tokenizer and ChatML template."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny-qwen2"), arch="qwen2")


@pytest.fixture(scope="session")
def tiny_qwen3_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random tiny Qwen3 model with the same tokenizer."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny-qwen3"), arch="qwen3")
