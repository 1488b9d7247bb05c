"""`medplay train` argument handling: profile choice, and user mistakes reported before Ray starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medical_team.cli import main
from medical_team.cli.train import with_profile


def test_explicit_profile_wins_over_the_probe(tmp_path: Path) -> None:
    report = tmp_path / "probe.json"
    report.write_text(json.dumps({"profile": "80g"}))
    assert with_profile(["profile=24g", "trainer.total_epochs=1"], report) == ["profile=24g", "trainer.total_epochs=1"]


def test_probe_choice_is_the_default(tmp_path: Path) -> None:
    report = tmp_path / "probe.json"
    report.write_text(json.dumps({"profile": "48g", "gpu": None}))
    assert with_profile(["trainer.total_epochs=1"], report) == ["profile=48g", "trainer.total_epochs=1"]


def test_cpu_smoke_without_a_probe_report(tmp_path: Path) -> None:
    assert with_profile([], tmp_path / "absent.json") == ["profile=cpu-smoke"]


def test_broken_probe_report_is_a_user_error(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "probe.json"
    report.write_text("{not json")
    assert main(["train", "--probe-report", str(report)]) == 2
    assert f"medplay train: error: {report}: not a probe report" in capfd.readouterr().err


def test_unknown_profile_names_the_real_ones(capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "profile=12g"]) == 2
    err = capfd.readouterr().err
    assert "12g" in err and "cpu-smoke" in err and "80g" in err


def test_missing_data_names_the_file_and_the_fix(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "profile=cpu-smoke", f"medplay.data_dir={tmp_path}", f"medplay.output_dir={tmp_path}"]) == 2
    err = capfd.readouterr().err
    assert f"{tmp_path}/train.parquet: field 'data.train_files': not found" in err
    assert "medplay convert --output" in err


def test_bad_game_settings_are_reported_together(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    overrides = ["medplay.training_mode=both", "medplay.rewards.scheme=odd", f"medplay.output_dir={tmp_path}"]
    assert main(["train", "profile=cpu-smoke", *overrides]) == 2
    err = capfd.readouterr().err
    assert "medplay.training_mode: 'both' must be one of joint, assessor, attacker" in err
    assert "medplay.rewards.scheme: 'odd'" in err


def test_the_step_summary_merges_a_steps_records_and_names_a_bad_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from medical_team.cli.train import SUMMARY_METRICS, print_step_lines

    metrics = tmp_path / "metrics.jsonl"
    records = [
        {"step": 1, "data": {"timing_s/step": 4.0, "assessor/accuracy": 0.25}},
        {"step": 1, "data": {"game/tie_rate": 0.5}},  # merged into step 1
        {"step": 2, "data": {"timing_s/step": 3.0}},
    ]
    metrics.write_text("".join(json.dumps(record) + "\n" for record in records) + '{"step": 3, "da')  # being written
    print_step_lines("train", metrics, SUMMARY_METRICS, digits=3)
    assert capsys.readouterr().out.splitlines() == [
        "step 1: timing_s/step=4  assessor/accuracy=0.25  game/tie_rate=0.5",
        "step 2: timing_s/step=3",
    ]
    metrics.write_text(json.dumps(records[0]) + "\nnot json\n" + json.dumps(records[2]) + "\n")
    print_step_lines("train", metrics, SUMMARY_METRICS, digits=3)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("medplay train: no per-step summary: metrics.jsonl:row 2: field 'line'")
