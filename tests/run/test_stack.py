"""`medical_team.run.stack`: the versions `medplay version` prints, and what every run records in versions.json."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from medical_team.launcher.preparation import record_run
from medical_team.run.stack import IMAGE_TAG_ENV, UNKNOWN, git_commit, run_record, stack_versions


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` as a throwaway identity."""
    command = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()


def test_stack_versions_are_the_installed_ones() -> None:
    versions = stack_versions()
    assert versions["verl"] == "0.9.1"
    assert versions["torch"].startswith("2.13.0")
    # torch's build from its version.py: this environment's CPU build (the GPU image: 2.11.0+cu130 and 13.0).
    assert (versions["torch_build"], versions["torch_cuda"]) == ("2.13.0+cpu", None)
    assert versions["medplay"]


def test_git_commit_of_a_checkout_and_of_a_plain_folder(tmp_path: Path) -> None:
    assert git_commit(tmp_path) == UNKNOWN
    git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("a")
    git(tmp_path, "add", "a.txt")
    git(tmp_path, "commit", "-q", "-m", "a")
    head = git(tmp_path, "rev-parse", "HEAD")
    assert git_commit(tmp_path) == head
    (tmp_path / "a.txt").write_text("b")
    assert git_commit(tmp_path) == f"{head}-dirty"


def test_every_run_records_versions_image_tag_and_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(IMAGE_TAG_ENV, "medplay:0.1.0-test")
    config = OmegaConf.create(
        {"medplay": {"output_dir": str(tmp_path), "metrics_file": str(tmp_path / "checkpoints" / "metrics.jsonl")}}
    )
    record_run(config)
    recorded = json.loads((tmp_path / "versions.json").read_text())
    assert recorded["verl"] == "0.9.1" and recorded["image_tag"] == "medplay:0.1.0-test"
    assert recorded["git_commit"] == git_commit() != ""
    assert (tmp_path / "config.yaml").is_file()
    monkeypatch.delenv(IMAGE_TAG_ENV)
    assert run_record()["image_tag"] == UNKNOWN
