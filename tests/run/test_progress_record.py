"""The progress record: each phase's start written whole, the phase before timed, durations kept across writers.

    .venv/bin/python -m pytest -q tests/run/test_progress_record.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from medical_team.run.progress_record import DURATIONS_KEPT, STARTUP, ProgressWriter, progress_path, read_progress


def test_each_phase_replaces_the_record_and_times_the_one_before(tmp_path: Path) -> None:
    path = progress_path(tmp_path)
    ProgressWriter(path, attempt=2).enter(STARTUP, 4)
    writer = ProgressWriter(path)  # the trainer's, continuing the watchdog's record
    writer.enter("generation", 5)
    writer.enter("update", 5)
    progress = read_progress(path)
    assert progress is not None
    assert (progress.step, progress.phase, progress.attempt, progress.first_step, progress.pid) == (
        5, "update", 2, 5, os.getpid(),
    )  # fmt: skip
    assert list(progress.durations) == ["generation"]  # start-up is not a phase of a step: not timed
    assert progress.usual_s("generation") == progress.durations["generation"][0] >= 0
    assert [p.name for p in tmp_path.iterdir()] == ["progress.json"]  # no temporary file left


def test_durations_survive_a_new_writer_and_keep_a_window(tmp_path: Path) -> None:
    path = progress_path(tmp_path)
    writer = ProgressWriter(path)
    for step in range(1, DURATIONS_KEPT + 6):
        writer.enter("update", step)
        writer.enter("metrics", step)
    again = ProgressWriter(path, attempt=3)
    again.enter(STARTUP, 10)
    progress = read_progress(path)
    assert progress is not None and progress.attempt == 3 and progress.first_step is None
    assert len(progress.durations["update"]) == DURATIONS_KEPT


def test_an_unknown_phase_is_refused_and_a_missing_or_torn_record_reads_as_none(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown phase 'rollout'"):
        ProgressWriter(progress_path(tmp_path)).enter("rollout", 1)
    assert read_progress(progress_path(tmp_path)) is None
    progress_path(tmp_path).write_text('{"step": 1, "pha')
    assert read_progress(progress_path(tmp_path)) is None
    progress_path(tmp_path).write_text(json.dumps({"step": 1}))
    assert read_progress(progress_path(tmp_path)) is None
