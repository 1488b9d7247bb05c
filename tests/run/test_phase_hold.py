"""The phase hold a test asks for (medical_team/run/phase_hold.py): read from the environment, refused when malformed,
its held file whole when it appears."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from held_files import wait_for_file

from medical_team.run.phase_hold import HOLD_ENV, PhaseHold, asked_holds, run_step
from medical_team.run.progress_record import ProgressWriter, progress_path
from medical_team.run.run_key import RUN_FOLDER_ENV


def test_holds_are_read_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv(HOLD_ENV, "checkpoint_save@3:/tmp/held:/tmp/release,rollout@4:/tmp/h2:/tmp/r2")
    assert asked_holds() == (
        PhaseHold("checkpoint_save", 3, Path("/tmp/held"), Path("/tmp/release")),
        PhaseHold("rollout", 4, Path("/tmp/h2"), Path("/tmp/r2")),
    )
    monkeypatch.delenv(HOLD_ENV)
    assert asked_holds() == ()


@pytest.mark.parametrize(
    "value",
    ["update_actor", "update_actor@2:/only/held", "nothing@1:/a:/b", "start-up@1:/a:/b", "rollout@1:/a:/b,ref@x:/a:/b"],
)
def test_a_malformed_hold_is_refused_naming_the_form_and_the_phases(monkeypatch, value: str) -> None:
    monkeypatch.setenv(HOLD_ENV, value)
    with pytest.raises(ValueError, match=r"expected PHASE@STEP:HELD:RELEASE\[,...\], PHASE one of rollout, .*, advantage, "):
        asked_holds()


def test_only_the_held_step_waits_and_its_file_is_whole(tmp_path: Path) -> None:
    hold = PhaseHold("update_actor", 2, tmp_path / "held", tmp_path / "release")
    hold.at_step(1)
    hold.at_step(None)  # no progress record yet
    assert not hold.held.exists()
    call = threading.Thread(target=hold.at_step, args=(2,), daemon=True)
    call.start()
    wait_for_file(hold.held)
    assert hold.held.read_text().startswith("update_actor of step 2 held until")  # never seen half written
    assert call.is_alive() and not list(tmp_path.glob(".held.*"))
    hold.release.touch()
    call.join(timeout=60)
    assert not call.is_alive()


def test_a_worker_reads_its_runs_step_from_the_progress_record(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(RUN_FOLDER_ENV, raising=False)
    assert run_step() is None  # not a run's process
    monkeypatch.setenv(RUN_FOLDER_ENV, str(tmp_path))
    assert run_step() is None  # the run has no record yet
    ProgressWriter(progress_path(tmp_path)).enter("generation", 3)
    assert run_step() == 3
