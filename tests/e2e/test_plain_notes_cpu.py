"""End to end: a 20-note plain CSV (no labels) converts and trains one cpu-smoke step of verl's real trainer.

    .venv/bin/python -m pytest -q -m e2e tests/e2e/test_plain_notes_cpu.py

`medplay convert --notes` in its own process on notes with sequential ids (n1..n20, each its own case), then
`medplay train profile=cpu-smoke` for one step on its train.parquet: every game is adversarial_benign (the attacker
injects an error into the note, the judge settles the truth: the rules judge on CPU), and both roles train.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cpu_smoke import MEDPLAY, metrics_by_step, train
from plain_notes_files import write_plain_csv

from medical_team.reliability.checkpoints import COMPLETE_MARKER
from medical_team.run_folder.checkpoint_folder import read_tracker

pytestmark = [pytest.mark.e2e, pytest.mark.long]

NOTES = 20


def test_a_20_note_plain_csv_converts_and_trains_one_cpu_smoke_step(tmp_path: Path) -> None:
    notes = write_plain_csv(tmp_path / "notes.csv", NOTES)
    convert = subprocess.run(
        [MEDPLAY, "convert", "--notes", str(notes), "--output", str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert convert.returncode == 0, convert.stderr
    report = json.loads((tmp_path / "data" / "dataset_report.json").read_text(encoding="utf-8"))
    assert report["seeds"]["by_category"]["adversarial_benign"]["total"] == NOTES
    assert report["splits"]["train"]["case_groups"] + report["splits"]["val"]["case_groups"] == NOTES

    train(tmp_path, 1)

    data = metrics_by_step(tmp_path)[1]
    assert data["game/count/adversarial_benign"] > 0, data
    assert all(data[f"game/count/{category}"] == 0 for category in ("vanilla_harmful", "vanilla_benign")), data
    assert data["game/count/adversarial_harmful"] == 0, data
    assert data["samples/attacker"] > 0 and data["samples/assessor"] > 0, data
    assert read_tracker(tmp_path / "checkpoints") == 1
    assert (tmp_path / "checkpoints" / "global_step_1" / COMPLETE_MARKER).is_file()
