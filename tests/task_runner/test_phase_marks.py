"""The trainer's phase marks (medical_team/task_runner/phase_marks.py): each mark is in the progress record before the
trainer's own held phase (tests only, `MEDPLAY_INJECT_HOLD`) waits, so the watchdog times the hold as that phase."""

from __future__ import annotations

import threading
from pathlib import Path

from held_files import wait_for_file

from medical_team.run.phase_hold import HOLD_ENV
from medical_team.run.progress_record import progress_path, read_progress
from medical_team.task_runner.phase_marks import PhaseMarks


def test_the_nth_beginning_of_a_held_phase_waits_after_the_record_says_so(tmp_path: Path, monkeypatch) -> None:
    held, release = tmp_path / "held", tmp_path / "release"
    monkeypatch.setenv(HOLD_ENV, f"advantage@2:{held}:{release}")
    marks = PhaseMarks()
    marks._start_marks(str(tmp_path))
    marks.global_steps = 1
    marks._mark("advantage")
    marks._mark("update")
    assert not held.exists()  # the first beginning and other phases pass
    marks.global_steps = 2
    call = threading.Thread(target=marks._mark, args=("advantage",), daemon=True)
    call.start()
    wait_for_file(held)
    progress = read_progress(progress_path(tmp_path))
    assert progress is not None and (progress.phase, progress.step) == ("advantage", 2)
    assert "advantage's call 2 held until" in held.read_text() and call.is_alive()
    release.touch()
    call.join(timeout=60)
    assert not call.is_alive()


def test_without_a_hold_marks_only_record(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(HOLD_ENV, raising=False)
    marks = PhaseMarks()
    marks._start_marks(str(tmp_path))
    marks.global_steps = 3
    marks._mark("weight_sync")
    progress = read_progress(progress_path(tmp_path))
    assert progress is not None and (progress.phase, progress.step, progress.first_step) == ("weight_sync", 3, 3)
