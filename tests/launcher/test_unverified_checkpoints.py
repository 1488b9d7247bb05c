"""`medplay train` resumes only from checkpoints with a manifest unless told to trust others (their pickles run)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cpu_smoke import convert, train_command

from medical_team.run_folder.checkpoint_folder import TRACKER_NAME, read_tracker

pytestmark = pytest.mark.slow


def plain_verl_checkpoint(checkpoints: Path, step: int) -> None:
    """A checkpoint laid out as plain verl writes one: shards, dataloader state, tracker; no medplay marker."""
    actor = checkpoints / f"global_step_{step}" / "actor"
    actor.mkdir(parents=True)
    (actor / "model_world_size_1_rank_0.pt").write_bytes(b"not a pickle anyone should load")
    (checkpoints / f"global_step_{step}" / "data.pt").write_bytes(b"nor this")
    (checkpoints / TRACKER_NAME).write_text(str(step))


def test_a_checkpoint_without_a_manifest_stops_the_run_before_it_is_loaded(tmp_path: Path) -> None:
    convert(tmp_path / "data")
    plain_verl_checkpoint(tmp_path / "checkpoints", 3)
    done = subprocess.run(
        train_command(tmp_path, 1), cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"medplay train: error: {tmp_path / 'checkpoints'}: global_step_3 has no manifest")
    assert "medplay.trust_unverified_checkpoints=true" in last
    assert "global_step_3 has no manifest of its files; skipping it" in done.stdout + done.stderr
    assert read_tracker(tmp_path / "checkpoints") == 3  # left as it was for a run that trusts it
