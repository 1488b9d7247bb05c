"""medplay refuses a verl release other than the one its patches were written for, with a message saying what to do."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from medical_team.run.stack import read_lock
from medical_team.run.verl_version import (
    ALLOW_OTHER_VERL_ENV,
    VERL_VERSION,
    VerlVersionError,
    check_verl_version,
)

REPO = Path(__file__).resolve().parents[2]


def test_the_installed_verl_passes() -> None:
    assert importlib.metadata.version("verl") == VERL_VERSION
    check_verl_version()


def test_another_verl_is_refused_with_the_way_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ALLOW_OTHER_VERL_ENV, raising=False)
    with pytest.raises(VerlVersionError) as raised:
        check_verl_version("0.9.2")
    message = str(raised.value)
    assert f"written for verl {VERL_VERSION}, but verl 0.9.2 is installed" in message
    assert f"verl=={VERL_VERSION}" in message and f"{ALLOW_OTHER_VERL_ENV}=1" in message
    assert "docs/verl-integration.md" in message
    monkeypatch.setenv(ALLOW_OTHER_VERL_ENV, "1")
    check_verl_version("0.9.2")


def test_the_checked_version_is_the_pinned_one() -> None:
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    (verl,) = [Requirement(d) for d in dependencies if Requirement(d).name == "verl"]
    assert str(verl.specifier) == f"=={VERL_VERSION}"
    for lock in ("requirements/cpu.lock", "docker/requirements-gpu.lock"):
        assert read_lock(REPO / lock).versions()["verl"] == VERL_VERSION, lock
