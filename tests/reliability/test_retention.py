"""Retention: `max_actor_ckpt_to_keep` whole step folders, removed only once a newer step is committed.

Run: PYTHONPATH=tests .venv/bin/python -m pytest -q tests/reliability/test_retention.py

Every test lays out real checkpoint folders as verl writes them and drives the trainer's own `StepCommits`
(saving, verl's save, saved, then the commit once the metrics are logged).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medical_team.reliability.checkpoints import COMPLETE_MARKER, WEIGHTLESS, damage, mark_complete, repair_tracker
from medical_team.reliability.retention import REMOVING_SUFFIX, husks, keeps_all, remove_husks, retain
from medical_team.reliability.step_commits import StepCommits
from medical_team.reliability.verified import verified_checkpoint
from medical_team.run_folder.checkpoint_folder import TRACKER_NAME, read_tracker, step_dirs


def verl_save(root: Path, step: int) -> Path:
    """What verl's `_save_checkpoint` leaves: the actor's files, then `data.pt`, then the tracker at the step."""
    step_dir = root / f"global_step_{step}"
    (step_dir / "actor" / "huggingface").mkdir(parents=True, exist_ok=True)
    (step_dir / "actor" / "model_world_size_1_rank_0.pt").write_bytes(b"weights %d" % step)
    (step_dir / "actor" / "huggingface" / "model.safetensors").write_bytes(b"hf %d" % step)
    (step_dir / "data.pt").write_bytes(b"loader %d" % step)
    (root / TRACKER_NAME).write_text(str(step))
    return step_dir


def save_and_commit(commits: StepCommits, step: int) -> list[int]:
    """One save of the trainer (`_save_checkpoint`), then the commit that follows the step's metrics line."""
    previous = read_tracker(commits.root)
    commits.saving(step)
    verl_save(commits.root, step)
    commits.saved(step, previous)
    return commits.commit()


def husk(root: Path, step: int) -> Path:
    """A step folder as verl's own retention left it under an older medplay: `data.pt` and a marker, no `actor/`."""
    step_dir = verl_save(root, step)
    mark_complete(step_dir, step)
    for path in sorted((step_dir / "actor").rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    (step_dir / "actor").rmdir()
    return step_dir


@pytest.mark.parametrize("keep", [1, 2, 3])
def test_only_the_newest_kept_checkpoints_remain_each_whole(tmp_path: Path, keep: int) -> None:
    commits = StepCommits(tmp_path, keep=keep)
    for step in range(1, 7):
        save_and_commit(commits, step)
        kept = list(range(max(1, step - keep + 1), step + 1))
        assert sorted(step_dirs(tmp_path)) == kept
        assert read_tracker(tmp_path) == step
        for folder in step_dirs(tmp_path).values():  # whole: marked, and every file of its manifest there
            assert (folder / COMPLETE_MARKER).is_file() and damage(folder) == []
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        [TRACKER_NAME, *(f"global_step_{step}" for step in range(7 - keep, 7))]
    )


@pytest.mark.parametrize("keep", [1, 2])
def test_the_committed_checkpoint_stays_until_the_next_one_is_committed(tmp_path: Path, keep: int) -> None:
    commits = StepCommits(tmp_path, keep=keep)
    for step in range(1, keep + 1):
        save_and_commit(commits, step)
    commits.saving(keep + 1)
    verl_save(tmp_path, keep + 1)
    commits.saved(keep + 1, keep)
    # killed here: the newest committed checkpoint is whole, the tracker names it, and a rerun resumes from it
    assert sorted(step_dirs(tmp_path)) == list(range(1, keep + 2))
    assert read_tracker(tmp_path) == keep
    assert repair_tracker(tmp_path, trust_unverified=False).resume_step == keep
    assert commits.commit() == [1]
    assert sorted(step_dirs(tmp_path)) == list(range(2, keep + 2))


@pytest.mark.parametrize("keep", [None, 0, -1, "2", 2.0])
def test_verls_keep_everything_values_remove_nothing(tmp_path: Path, keep: object) -> None:
    assert keeps_all(keep)
    commits = StepCommits(tmp_path, keep=keep)
    for step in range(1, 5):
        assert save_and_commit(commits, step) == []
    assert sorted(step_dirs(tmp_path)) == [1, 2, 3, 4]


def test_a_resumed_run_removes_what_the_runs_before_it_saved(tmp_path: Path) -> None:
    earlier = StepCommits(tmp_path, keep=None)  # an earlier run that kept everything
    for step in (10, 20, 30):
        save_and_commit(earlier, step)
    resumed = StepCommits(tmp_path, keep=2)  # a new process: verl's list of its saves would start empty
    assert save_and_commit(resumed, 40) == [10, 20]
    assert sorted(step_dirs(tmp_path)) == [30, 40]


def test_torn_saves_below_go_and_folders_above_the_committed_step_stay(tmp_path: Path) -> None:
    commits = StepCommits(tmp_path, keep=1)
    save_and_commit(commits, 1)
    torn = tmp_path / "global_step_2" / "actor"  # killed while writing step 2: no data.pt, no marker
    torn.mkdir(parents=True)
    (torn / "model_world_size_1_rank_0.pt").write_bytes(b"half")
    ahead = verl_save(tmp_path, 9)  # a save of step 9 a killed run never committed (the resume replays to it)
    (tmp_path / TRACKER_NAME).write_text("1")
    assert save_and_commit(commits, 3) == [1, 2]
    assert sorted(step_dirs(tmp_path)) == [3, 9] and (ahead / "data.pt").is_file()


def test_the_tracked_checkpoint_is_never_removed(tmp_path: Path) -> None:
    for step in (1, 2, 3):
        mark_complete(verl_save(tmp_path, step), step)
    (tmp_path / TRACKER_NAME).write_text("1")  # the tracker names an older one (rewritten by hand, say)
    assert retain(tmp_path, 1, 3) == [2]
    assert sorted(step_dirs(tmp_path)) == [1, 3]


def test_a_removal_cut_short_leaves_no_step_folder_and_is_finished_later(tmp_path: Path) -> None:
    commits = StepCommits(tmp_path, keep=1)
    save_and_commit(commits, 1)
    cut = tmp_path / f"global_step_0{REMOVING_SUFFIX}"  # renamed out of the step names, then the process died
    (cut / "actor").mkdir(parents=True)
    (cut / "actor" / "model_world_size_1_rank_0.pt").write_bytes(b"half deleted")
    assert sorted(step_dirs(tmp_path)) == [1]  # no reader takes it for a checkpoint
    assert verified_checkpoint(tmp_path).step == 1
    save_and_commit(commits, 2)
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted([TRACKER_NAME, "global_step_2"])


def test_husks_are_found_skipped_and_removed(tmp_path: Path) -> None:
    for step in (1, 2, 3):
        husk(tmp_path, step)
    commits = StepCommits(tmp_path, keep=None)
    for step in (4, 5):
        save_and_commit(commits, step)
    empty = tmp_path / "global_step_6" / "actor"  # a save killed before its first file
    empty.mkdir(parents=True)
    (tmp_path / TRACKER_NAME).write_text("6")
    assert husks(tmp_path) == [1, 2, 3, 6]
    report = repair_tracker(tmp_path, trust_unverified=False)
    assert (report.resume_step, report.weightless) == (5, [6])
    assert f"checkpoint global_step_6 {WEIGHTLESS}; skipping it" in report.messages()

    assert remove_husks(tmp_path) == [1, 2, 3, 6]
    assert sorted(step_dirs(tmp_path)) == [4, 5] and read_tracker(tmp_path) == 5
    assert remove_husks(tmp_path) == []


def test_the_marker_of_a_kept_checkpoint_lists_only_files_that_are_there(tmp_path: Path) -> None:
    commits = StepCommits(tmp_path, keep=2)
    previous = None
    for step in range(1, 5):
        commits.saving(step)
        step_dir = verl_save(tmp_path, step)
        commits.saved(step, previous)
        (step_dir / "actor" / "lora_adapter").mkdir()  # the trainer's LoRA export, after the save, before the commit
        (step_dir / "actor" / "lora_adapter" / "adapter_config.json").write_text("{}")
        commits.commit()
        previous = step
    for step, folder in step_dirs(tmp_path).items():
        files = json.loads((folder / COMPLETE_MARKER).read_text())["files"]
        assert "actor/lora_adapter/adapter_config.json" in files
        assert all((folder / name).is_file() for name in files), step
