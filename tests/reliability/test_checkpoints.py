"""Checkpoint integrity: torn checkpoints are skipped and the tracker always names a complete one."""

from __future__ import annotations

from pathlib import Path

import pytest

from medical_team.checkpoint_folder import TRACKER_NAME, read_tracker
from medical_team.verl_ext.reliability.checkpoints import (
    COMPLETE_MARKER,
    StepCommits,
    mark_complete,
    repair_tracker,
    write_atomically,
)


def _verl_save(root: Path, step: int, *, finished: bool = True, marked: bool = True) -> Path:
    """Lay out a checkpoint folder the way verl writes one (actor shards, then data.pt, then tracker)."""
    step_dir = root / f"global_step_{step}"
    (step_dir / "actor").mkdir(parents=True)
    (step_dir / "actor" / "model_world_size_1_rank_0.pt").write_bytes(b"weights")
    if finished:
        (step_dir / "data.pt").write_bytes(b"loader")
        (root / TRACKER_NAME).write_text(str(step))
        if marked:
            mark_complete(step_dir, step)
    return step_dir


def test_complete_checkpoints_leave_the_tracker_alone(tmp_path: Path) -> None:
    _verl_save(tmp_path, 2)
    _verl_save(tmp_path, 4)
    report = repair_tracker(tmp_path)
    assert (report.resume_step, report.rewritten, report.torn_steps) == (4, False, [])
    assert read_tracker(tmp_path) == 4


def test_a_save_killed_midway_is_skipped_for_the_previous_checkpoint(tmp_path: Path) -> None:
    _verl_save(tmp_path, 2)
    _verl_save(tmp_path, 4, finished=False)  # killed while writing shards: tracker still says 2
    report = repair_tracker(tmp_path)
    assert report.resume_step == 2 and report.torn_steps == [4]
    assert read_tracker(tmp_path) == 2
    assert any("global_step_4 is incomplete" in line for line in report.messages())


def test_an_empty_tracker_from_a_kill_during_its_write_is_rebuilt(tmp_path: Path) -> None:
    _verl_save(tmp_path, 2)
    _verl_save(tmp_path, 4)
    (tmp_path / TRACKER_NAME).write_text("")  # open("w") truncated it, then SIGKILL
    report = repair_tracker(tmp_path)
    assert report.resume_step == 4 and report.rewritten
    assert read_tracker(tmp_path) == 4


def test_a_tracked_checkpoint_killed_before_its_marker_is_still_complete(tmp_path: Path) -> None:
    _verl_save(tmp_path, 2)
    _verl_save(tmp_path, 4, marked=False)  # verl finished and wrote the tracker; marker never written
    assert repair_tracker(tmp_path).resume_step == 4


def test_only_torn_checkpoints_means_training_from_scratch(tmp_path: Path) -> None:
    _verl_save(tmp_path, 2, finished=False)
    report = repair_tracker(tmp_path)
    assert report.resume_step is None and report.torn_steps == [2]
    assert not (tmp_path / TRACKER_NAME).exists()


def test_missing_root_is_a_fresh_start(tmp_path: Path) -> None:
    report = repair_tracker(tmp_path / "none")
    assert report.resume_step is None and not report.rewritten


def test_write_atomically_leaves_no_temporary_files(tmp_path: Path) -> None:
    target = tmp_path / "x" / TRACKER_NAME
    write_atomically(target, "7")
    write_atomically(target, "8")
    assert target.read_text() == "8"
    assert sorted(p.name for p in target.parent.iterdir()) == [TRACKER_NAME]


@pytest.mark.parametrize("content", ["", "abc", "3.5"])
def test_read_tracker_rejects_garbage(tmp_path: Path, content: str) -> None:
    (tmp_path / TRACKER_NAME).write_text(content)
    assert read_tracker(tmp_path) is None


def test_marker_is_json_with_the_step(tmp_path: Path) -> None:
    mark_complete(tmp_path, 9)
    assert (tmp_path / COMPLETE_MARKER).read_text() == '{"global_step": 9}'


def test_step_commit_holds_the_tracker_until_the_metrics_are_logged(tmp_path: Path) -> None:
    commits = StepCommits(tmp_path)
    _verl_save(tmp_path, 1, marked=False)
    commits.saved(1, previous=None)
    assert read_tracker(tmp_path) is None  # a crash now starts from scratch and replays step 1
    assert repair_tracker(tmp_path).resume_step is None
    commits.commit()
    assert read_tracker(tmp_path) == 1 and (tmp_path / "global_step_1" / COMPLETE_MARKER).is_file()

    _verl_save(tmp_path, 2, marked=False)
    commits.saved(2, previous=1)
    assert read_tracker(tmp_path) == 1  # a crash now resumes from step 1 and replays step 2
    assert repair_tracker(tmp_path).resume_step == 1
    commits.commit()
    assert read_tracker(tmp_path) == 2
    commits.commit()  # nothing pending: no change
    assert read_tracker(tmp_path) == 2


def test_step_commit_keeps_a_checkpoint_whose_predecessor_was_rotated_away(tmp_path: Path) -> None:
    commits = StepCommits(tmp_path)
    _verl_save(tmp_path, 3, marked=False)  # global_step_2 already deleted by max_actor_ckpt_to_keep=1
    commits.saved(3, previous=2)
    assert read_tracker(tmp_path) == 3 and commits.pending is None


def test_step_commit_ignores_an_asynchronous_save(tmp_path: Path) -> None:
    _verl_save(tmp_path, 1)
    commits = StepCommits(tmp_path)
    (tmp_path / "global_step_2" / "actor").mkdir(parents=True)  # async save in flight, tracker untouched
    commits.saved(2, previous=1)
    assert read_tracker(tmp_path) == 1 and commits.pending is None
