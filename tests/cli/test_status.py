"""`medplay status OUTPUT_DIR`: the run's step and phase, seconds in it, its usual time and limit, stalls, restarts.

    .venv/bin/python -m pytest -q tests/cli/test_status.py
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from medical_team.cli import main
from medical_team.cli.status import status_lines
from medical_team.run.progress_record import ProgressWriter, progress_path, read_progress
from medical_team.run.settings import WatchdogSettings
from medical_team.run.watchdog_files import EVENTS_NAME, SETTINGS_NAME, STALL_NAME, WATCHDOG_FOLDER

SETTINGS = WatchdogSettings(
    enabled=True, k=5, floor_s=180, startup_s=1800, first_steps=0, first_steps_s=240, max_restarts=3, poll_s=5,
    kill_grace_s=20,
)  # fmt: skip


def test_status_shows_the_phase_its_usual_time_its_limit_and_the_restarts(tmp_path: Path) -> None:
    writer = ProgressWriter(progress_path(tmp_path), attempt=2)
    for step in (4, 5):
        writer.enter("update", step)
        writer.enter("metrics", step)
    writer.enter("update", 6)
    folder = tmp_path / WATCHDOG_FOLDER
    folder.mkdir()
    (folder / SETTINGS_NAME).write_text(json.dumps(dataclasses.asdict(SETTINGS)))
    restart = {"time": "T", "event": "restart", "status": 137, "phase": "update", "step": 3, "stall": {"x": 1}}
    (folder / EVENTS_NAME).write_text(json.dumps(restart) + "\n")
    progress = read_progress(progress_path(tmp_path))
    assert progress is not None
    lines = status_lines(tmp_path, now=progress.since + 12)
    assert lines[0] == f"run: {tmp_path} (attempt 2; the record's writer, pid {os.getpid()}, is running)"
    assert lines[1].startswith("step 6, update (the actor's update) for 12 s; usually ")
    assert lines[1].endswith("; stall limit 180 s")
    assert lines[2] == "restarts: 1; the last at T after a stall in update at step 3"
    (folder / STALL_NAME).write_text(json.dumps({"step": 6, "phase": "update", "record": "/out/hangs/X"}))
    assert status_lines(tmp_path)[2] == "stall declared: step 6 in update; record: /out/hangs/X"


def test_status_of_a_folder_without_a_run_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["status", str(tmp_path)]) == 2
    assert "progress.json: no progress record here" in capsys.readouterr().err
