"""The tests' step hold (medical_team/plugin/step_hold.py) on verl's own worker class: a call of a phase's method made
while the run's progress record says the held step writes its held file and waits for the release file before verl's
method runs; calls in other steps do not."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from held_files import wait_for_file

from medical_team.plugin.step_hold import hold_in_this_process
from medical_team.run.phase_hold import HOLD_ENV
from medical_team.run.progress_record import ProgressWriter, progress_path
from medical_team.run.run_key import RUN_FOLDER_ENV


def test_a_call_in_the_held_step_waits_for_the_release_file_after_saying_so(tmp_path: Path, monkeypatch) -> None:
    from verl.single_controller.base.decorator import MAGIC_ATTR
    from verl.workers.engine_workers import ActorRolloutRefWorker

    original = ActorRolloutRefWorker.update_actor
    monkeypatch.setattr(ActorRolloutRefWorker, "update_actor", original)  # restored after the test
    held, release = tmp_path / "logs" / "held", tmp_path / "release"
    monkeypatch.setenv(HOLD_ENV, f"update_actor@2:{held}:{release}")
    monkeypatch.setenv(RUN_FOLDER_ENV, str(tmp_path))
    progress = ProgressWriter(progress_path(tmp_path))
    progress.enter("update", 1)
    assert hold_in_this_process() == ("update_actor",)
    patched = ActorRolloutRefWorker.update_actor
    assert getattr(patched, MAGIC_ATTR) == getattr(original, MAGIC_ATTR)  # verl still dispatches it

    with pytest.raises(AttributeError):  # step 1's call goes straight to verl's method, which finds no worker
        patched(object(), None)
    assert not held.exists()
    progress.enter("update", 2)

    reached_verl: list[AttributeError] = []

    def second_call() -> None:
        try:
            patched(object(), None)
        except AttributeError as error:  # verl's method, reached without a worker
            reached_verl.append(error)

    call = threading.Thread(target=second_call, daemon=True)
    call.start()
    wait_for_file(held)
    assert "update_actor of step 2 held until" in held.read_text()
    assert call.is_alive() and reached_verl == []  # held: the release file does not exist yet

    release.touch()
    call.join(timeout=60)

    assert not call.is_alive() and len(reached_verl) == 1


@pytest.mark.parametrize("value", ["update_actor", "update_actor@2:/only/held", "nothing@1:/a:/b", "ref@x:/a:/b"])
def test_a_malformed_hold_is_refused_naming_the_form(monkeypatch, value: str) -> None:
    monkeypatch.setenv(HOLD_ENV, value)
    with pytest.raises(ValueError, match="expected PHASE@STEP:HELD:RELEASE"):
        hold_in_this_process()


def test_no_hold_asked_wraps_nothing(monkeypatch) -> None:
    monkeypatch.delenv(HOLD_ENV, raising=False)
    assert hold_in_this_process() == ()


def test_a_hold_of_the_trainers_own_phase_wraps_no_worker_method(monkeypatch) -> None:
    monkeypatch.setenv(HOLD_ENV, "advantage@2:/a:/b")
    assert hold_in_this_process() == ()  # the trainer holds it (tests/task_runner/test_phase_marks.py)

