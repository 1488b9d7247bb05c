"""The trainer's phase marks (medical_team/task_runner/phase_marks.py): each mark is in the progress record before the
trainer's own held phase (tests only, `MEDPLAY_INJECT_HOLD`) waits, so the watchdog times the hold as that phase."""

from __future__ import annotations

import threading
from pathlib import Path

from held_files import wait_for_file

from medical_team.run.phase_hold import HOLD_ENV
from medical_team.run.progress_record import progress_path, read_progress
from medical_team.task_runner.phase_marks import PhaseMarks


def test_a_held_phase_of_its_step_waits_after_the_record_says_so(tmp_path: Path, monkeypatch) -> None:
    held, release = tmp_path / "held", tmp_path / "release"
    monkeypatch.setenv(HOLD_ENV, f"advantage@2:{held}:{release}")
    marks = PhaseMarks()
    marks._start_marks(str(tmp_path))
    marks.global_steps = 1
    marks._mark("advantage")
    marks._mark("update")
    assert not held.exists()  # another step's and other phases pass
    marks.global_steps = 2
    call = threading.Thread(target=marks._mark, args=("advantage",), daemon=True)
    call.start()
    wait_for_file(held)
    progress = read_progress(progress_path(tmp_path))
    assert progress is not None and (progress.phase, progress.step) == ("advantage", 2)
    assert "advantage of step 2 held until" in held.read_text() and call.is_alive()
    release.touch()
    call.join(timeout=60)
    assert not call.is_alive()
    held.unlink()
    marks._mark("advantage")  # step 2 again, as a restarted run does it: released, it passes
    assert not held.exists()


def test_two_holds_each_wait_in_their_own_step(tmp_path: Path, monkeypatch) -> None:
    first, second, release = tmp_path / "first", tmp_path / "second", tmp_path / "release"
    monkeypatch.setenv(HOLD_ENV, f"advantage@2:{first}:{release},metrics@3:{second}:{release}")
    marks = PhaseMarks()
    marks._start_marks(str(tmp_path))
    for step in (1, 2, 3):
        marks.global_steps = step
        call = threading.Thread(target=lambda: [marks._mark(phase) for phase in ("advantage", "metrics")], daemon=True)
        call.start()
        if step == 2:
            wait_for_file(first)
            assert call.is_alive() and not second.exists()
            release.touch()  # releases both: step 3's metrics then pass at once
        call.join(timeout=60)
        assert not call.is_alive()
    assert first.exists() and not second.exists()


def test_without_a_hold_marks_only_record(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(HOLD_ENV, raising=False)
    marks = PhaseMarks()
    marks._start_marks(str(tmp_path))
    marks.global_steps = 3
    marks._mark("weight_sync")
    progress = read_progress(progress_path(tmp_path))
    assert progress is not None and (progress.phase, progress.step, progress.first_step) == ("weight_sync", 3, 3)
