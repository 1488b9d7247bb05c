"""The phase hold a test asks for (medical_team/run/phase_hold.py): read from the environment, refused when malformed,
its held file whole when it appears."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from held_files import wait_for_file

from medical_team.run.phase_hold import HOLD_ENV, PhaseHold, asked_hold


def test_a_hold_is_read_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv(HOLD_ENV, "checkpoint_save@3:/tmp/held:/tmp/release")
    assert asked_hold() == PhaseHold("checkpoint_save", 3, Path("/tmp/held"), Path("/tmp/release"))
    monkeypatch.delenv(HOLD_ENV)
    assert asked_hold() is None


@pytest.mark.parametrize("value", ["update_actor", "update_actor@2:/only/held", "nothing@1:/a:/b", "start-up@1:/a:/b"])
def test_a_malformed_hold_is_refused_naming_the_form_and_the_phases(monkeypatch, value: str) -> None:
    monkeypatch.setenv(HOLD_ENV, value)
    with pytest.raises(ValueError, match="expected PHASE@N:HELD:RELEASE, PHASE one of rollout, .*, advantage, "):
        asked_hold()


def test_only_the_held_call_waits_and_its_file_is_whole(tmp_path: Path) -> None:
    hold = PhaseHold("update_actor", 2, tmp_path / "held", tmp_path / "release")
    hold.at_call(1)
    assert not hold.held.exists()
    call = threading.Thread(target=hold.at_call, args=(2,), daemon=True)
    call.start()
    wait_for_file(hold.held)
    assert hold.held.read_text().startswith("update_actor's call 2 held until")  # never seen half written
    assert call.is_alive() and not list(tmp_path.glob(".held.*"))
    hold.release.touch()
    call.join(timeout=60)
    assert not call.is_alive()
