"""Checkpoint integrity: torn and damaged checkpoints are skipped and the tracker always names a complete one.

Run: PYTHONPATH=tests .venv/bin/python -m pytest -q tests/reliability/test_checkpoints.py
"""

from __future__ import annotations

import json
import logging
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from medical_team.reliability.checkpoints import (
    COMPLETE_MARKER,
    mark_complete,
    repair_tracker,
    write_atomically,
)
from medical_team.reliability.manifest import SAMPLE_BYTES, WHOLE_FILE_LIMIT, digest
from medical_team.reliability.step_commits import StepCommits
from medical_team.run_folder.checkpoint_folder import TRACKER_NAME, read_tracker


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
    report = repair_tracker(tmp_path, trust_unverified=False)
    assert (report.resume_step, report.rewritten, report.torn_steps) == (4, False, [])
    assert read_tracker(tmp_path) == 4


def test_a_save_killed_midway_is_skipped_for_the_previous_checkpoint(tmp_path: Path) -> None:
    _verl_save(tmp_path, 2)
    _verl_save(tmp_path, 4, finished=False)  # killed while writing shards: tracker still says 2
    report = repair_tracker(tmp_path, trust_unverified=False)
    assert report.resume_step == 2 and report.torn_steps == [4]
    assert read_tracker(tmp_path) == 2
    assert any("global_step_4 is incomplete" in line for line in report.messages())


def test_an_empty_tracker_from_a_kill_during_its_write_is_rebuilt(tmp_path: Path) -> None:
    _verl_save(tmp_path, 2)
    _verl_save(tmp_path, 4)
    (tmp_path / TRACKER_NAME).write_text("")  # open("w") truncated it, then SIGKILL
    report = repair_tracker(tmp_path, trust_unverified=False)
    assert report.resume_step == 4 and report.rewritten
    assert read_tracker(tmp_path) == 4


@pytest.mark.parametrize("trusted", [False, True])
def test_a_tracked_checkpoint_killed_before_its_marker_is_resumed_only_when_trusted(
    tmp_path: Path, trusted: bool
) -> None:
    _verl_save(tmp_path, 2)
    _verl_save(tmp_path, 4, marked=False)  # verl finished and wrote the tracker; marker never written
    report = repair_tracker(tmp_path, trust_unverified=trusted)
    assert (report.resume_step, report.unverified, read_tracker(tmp_path)) == ((4, [], 4) if trusted else (2, [4], 2))
    assert trusted or any("global_step_4 has no manifest" in line for line in report.messages())


def test_only_plain_verl_checkpoints_leave_everything_for_a_trusting_rerun(tmp_path: Path) -> None:
    _verl_save(tmp_path, 2, marked=False)
    report = repair_tracker(tmp_path, trust_unverified=False)
    assert report.resume_step is None and report.unverified == [2]
    assert read_tracker(tmp_path) == 2  # untouched: `medplay train` refuses the run
    assert repair_tracker(tmp_path, trust_unverified=True).resume_step == 2


def test_only_torn_checkpoints_means_training_from_scratch(tmp_path: Path) -> None:
    _verl_save(tmp_path, 2, finished=False)
    report = repair_tracker(tmp_path, trust_unverified=False)
    assert report.resume_step is None and report.torn_steps == [2]
    assert not (tmp_path / TRACKER_NAME).exists()


def test_missing_root_is_a_fresh_start(tmp_path: Path) -> None:
    report = repair_tracker(tmp_path / "none", trust_unverified=False)
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


def test_the_marker_holds_the_step_and_a_manifest_of_every_file(tmp_path: Path) -> None:
    step_dir = _verl_save(tmp_path, 9, marked=False)
    (step_dir / "actor" / "huggingface").mkdir()
    (step_dir / "actor" / "huggingface" / "config.json").write_text("{}")
    mark_complete(step_dir, 9)
    record = json.loads((step_dir / COMPLETE_MARKER).read_text())
    assert record["global_step"] == 9
    assert {name: entry["size"] for name, entry in record["files"].items()} == {
        "actor/huggingface/config.json": 2,
        "actor/model_world_size_1_rank_0.pt": 7,
        "data.pt": 6,
    }
    assert record["files"]["data.pt"]["blake2b"] == digest(step_dir / "data.pt", 6)


def test_a_damaged_checkpoint_is_skipped_with_what_is_wrong_for_the_one_before(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _verl_save(tmp_path, 2)
    step_dir = _verl_save(tmp_path, 4)
    (step_dir / "actor" / "model_world_size_1_rank_0.pt").write_bytes(b"")  # emptied
    (step_dir / "data.pt").unlink()
    with caplog.at_level(logging.WARNING):
        report = repair_tracker(tmp_path, trust_unverified=False)
    assert report.resume_step == 2 and read_tracker(tmp_path) == 2
    warning = (
        "checkpoint global_step_4 does not match its manifest (actor/model_world_size_1_rank_0.pt: expected 7 bytes, "
        "found 0; data.pt: missing (expected 6 bytes)); skipping it"
    )
    assert report.messages() == [warning, f"tracker {TRACKER_NAME} said 4; now points to global_step_2"]
    assert warning in caplog.messages


def test_content_changed_within_the_same_size_is_found_by_the_sampled_digest(tmp_path: Path) -> None:
    _verl_save(tmp_path, 2)
    step_dir = _verl_save(tmp_path, 4, marked=False)
    big = step_dir / "actor" / "optim_world_size_1_rank_0.pt"
    big.write_bytes(os.urandom(WHOLE_FILE_LIMIT + 3 * SAMPLE_BYTES))  # digested from samples, not whole
    mark_complete(step_dir, 4)
    with big.open("r+b") as file:  # the last MiB zeroed, as a crash of the file system can leave it
        file.seek(-SAMPLE_BYTES, os.SEEK_END)
        file.write(bytes(SAMPLE_BYTES))
    report = repair_tracker(tmp_path, trust_unverified=False)
    assert report.resume_step == 2
    [problem] = report.damaged[4]
    assert problem.startswith("actor/optim_world_size_1_rank_0.pt: content differs (blake2b expected ")


@pytest.mark.parametrize("trusted", [False, True])
def test_a_marker_without_a_manifest_is_resumed_only_when_trusted(tmp_path: Path, trusted: bool) -> None:
    _verl_save(tmp_path, 2)
    step_dir = _verl_save(tmp_path, 4, marked=False)
    (step_dir / COMPLETE_MARKER).write_text('{"global_step": 4}')  # written before medplay kept a manifest
    assert repair_tracker(tmp_path, trust_unverified=trusted).resume_step == (4 if trusted else 2)


def test_an_unreadable_marker_makes_the_checkpoint_damaged(tmp_path: Path) -> None:
    _verl_save(tmp_path, 2)
    step_dir = _verl_save(tmp_path, 4)
    (step_dir / COMPLETE_MARKER).write_text('{"global_step": 4, "files": {"data.pt"')
    report = repair_tracker(tmp_path, trust_unverified=False)
    assert report.resume_step == 2 and report.damaged[4][0].startswith(f"{COMPLETE_MARKER}: unreadable (")


def test_damage_in_every_checkpoint_means_training_from_scratch(tmp_path: Path) -> None:
    for step in (2, 4):
        (_verl_save(tmp_path, step) / "data.pt").write_bytes(b"other!")  # same size, other content
    report = repair_tracker(tmp_path, trust_unverified=False)
    assert report.resume_step is None and sorted(report.damaged) == [2, 4]
    assert not (tmp_path / TRACKER_NAME).exists()


def test_a_step_saved_again_loses_the_marker_its_earlier_save_left(tmp_path: Path) -> None:
    _verl_save(tmp_path, 2)
    _verl_save(tmp_path, 4)  # damaged, say: the run resumed from step 2 and now saves step 4 again
    StepCommits(tmp_path).saving(4)
    assert not (tmp_path / "global_step_4" / COMPLETE_MARKER).exists()
    (tmp_path / TRACKER_NAME).write_text("2")  # killed during the new save of step 4: a torn folder, not a marked one
    assert repair_tracker(tmp_path, trust_unverified=False).resume_step == 2


def test_a_failed_replacement_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / TRACKER_NAME
    target.mkdir()
    (target / "keep").write_text("x")  # a non-empty folder where the file should go: os.replace fails, even as root
    with pytest.raises(IsADirectoryError):
        write_atomically(target, "7")
    assert sorted(p.name for p in tmp_path.iterdir()) == [TRACKER_NAME]


WRITE_UNDER_LIMIT = """
import sys
from pathlib import Path
from medical_team.reliability.checkpoints import write_atomically
try:
    write_atomically(Path(sys.argv[1]), "8" * 100_000)
except OSError as error:
    print(type(error).__name__, error.errno)
"""


def test_a_failed_write_leaves_no_temporary_file_and_the_old_content(tmp_path: Path) -> None:
    target = tmp_path / TRACKER_NAME
    target.write_text("7")

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # Python ignores SIGXFSZ: writes fail with EFBIG

    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    result = subprocess.run(
        [sys.executable, "-c", WRITE_UNDER_LIMIT, str(target)],
        env=env,
        preexec_fn=limit_file_size,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (result.returncode, result.stdout.split()) == (0, ["OSError", "27"]), result.stderr[-2000:]
    assert target.read_text() == "7"
    assert sorted(p.name for p in tmp_path.iterdir()) == [TRACKER_NAME]


def test_step_commit_holds_the_tracker_until_the_metrics_are_logged(tmp_path: Path) -> None:
    commits = StepCommits(tmp_path)
    _verl_save(tmp_path, 1, marked=False)
    commits.saved(1, previous=None)
    assert read_tracker(tmp_path) is None  # a crash now starts from scratch and replays step 1
    assert repair_tracker(tmp_path, trust_unverified=False).resume_step is None
    commits.commit()
    assert read_tracker(tmp_path) == 1 and (tmp_path / "global_step_1" / COMPLETE_MARKER).is_file()

    _verl_save(tmp_path, 2, marked=False)
    commits.saved(2, previous=1)
    assert read_tracker(tmp_path) == 1  # a crash now resumes from step 1 and replays step 2
    assert repair_tracker(tmp_path, trust_unverified=False).resume_step == 1
    commits.commit()
    assert read_tracker(tmp_path) == 2
    commits.commit()  # nothing pending: no change
    assert read_tracker(tmp_path) == 2


def test_step_commit_ignores_an_asynchronous_save(tmp_path: Path) -> None:
    _verl_save(tmp_path, 1)
    commits = StepCommits(tmp_path)
    (tmp_path / "global_step_2" / "actor").mkdir(parents=True)  # async save in flight, tracker untouched
    commits.saved(2, previous=1)
    assert read_tracker(tmp_path) == 1 and commits.pending is None
