"""`StepProgress`: one console line per step appended to the metrics JSONL while training runs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from medical_team.launcher.console.progress import StepProgress, clock_text, duration, progress_line


def record(step: int, **data: float) -> str:
    """One line as verl's file logger writes it."""
    return json.dumps({"step": step, "data": data}) + "\n"


def test_progress_line_has_bar_and_key_numbers() -> None:
    data = {"timing_s/step": 4.26, "assessor/accuracy": 0.5, "game/tie_rate": 0.0, "x": 1.0}
    line = progress_line(2, 4, {**data, "assessor/error_verdict_share": 0.52})
    assert line == "step 2/4 [##########----------]  4.3 s  assessor acc 0.50  ERROR share 0.52  ties 0.00"
    assert progress_line(2, 4, data) == "step 2/4 [##########----------]  4.3 s  assessor acc 0.50  ties 0.00"
    # fewer than two readable verdicts: both verdict monitors log 0.0, the line does not show a collapse
    unread = {"assessor/error_verdict_share": 0.0, "assessor/majority_verdict_share": 0.0}
    assert progress_line(1, None, unread) == "step 1  ERROR share n/a"
    read = {"assessor/error_verdict_share": 0.0, "assessor/majority_verdict_share": 1.0}
    assert progress_line(1, None, read) == "step 1  ERROR share 0.00"
    assert progress_line(7, None, {}) == "step 7"
    validated = {"val-core/medec_benchmark/acc/mean@1": 0.25}
    assert progress_line(0, 4, validated) == "validation at step 0  benchmark acc 0.25"
    assert progress_line(2, 4, {"timing_s/step": 4.26, **validated}).endswith("4.3 s  benchmark acc 0.25")


def test_the_clock_shows_the_time_so_far_and_an_estimate_of_the_rest() -> None:
    assert [duration(s) for s in (0, 59.6, 61, 3599, 3600, 36000 + 62)] == [
        "0:00",
        "1:00",
        "1:01",
        "59:59",
        "1:00:00",
        "10:01:02",
    ]
    assert clock_text(65.0, [4.0, 6.0], 2, 10) == "elapsed 1:05  ETA 0:40"  # 8 steps left at 5 s
    assert clock_text(65.0, [4.0], 10, 10) == clock_text(65.0, [4.0], 3, None) == "elapsed 1:05"
    assert clock_text(65.0, [], 0, 10) == "elapsed 1:05"  # a validation before the first step
    line = progress_line(2, 4, {"timing_s/step": 4.26, "assessor/accuracy": 0.5}, "elapsed 1:05  ETA 0:09")
    assert line == "step 2/4 [##########----------]  4.3 s  elapsed 1:05  ETA 0:09  assessor acc 0.50"


def test_only_steps_appended_after_the_start_are_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text(record(1, **{"timing_s/step": 9.0}))  # an earlier run's step (resume)
    progress = StepProgress(metrics, total_steps=3, poll_s=3600, clock=lambda: 100.0)  # polled by hand below
    with progress, metrics.open("a") as handle:
        handle.write(record(2, **{"timing_s/step": 2.0}))
        handle.flush()
        progress.poll()
        handle.write(record(3, **{"timing_s/step": 3.0})[:10])  # a line still being written
        handle.flush()
        progress.poll()
        assert capsys.readouterr().out.splitlines() == [
            "step 2/3 [#############-------]  2.0 s  elapsed 0:00  ETA 0:02"  # the earlier run's 9 s not counted
        ]
        handle.write(record(3, **{"timing_s/step": 3.0})[10:])
    assert capsys.readouterr().out.splitlines() == ["step 3/3 [####################]  3.0 s  elapsed 0:00"]


def test_the_thread_says_a_step_while_training_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    metrics = tmp_path / "metrics.jsonl"
    metrics.touch()
    said: list[str] = []
    with StepProgress(metrics, total_steps=2, poll_s=0.05, clock=lambda: 0.0), metrics.open("a") as handle:
        handle.write(record(1, **{"timing_s/step": 2.0}))
        handle.flush()
        deadline = time.monotonic() + 60  # a hang guard: the thread polls every 0.05 s
        while not said and time.monotonic() < deadline:
            time.sleep(0.05)
            said.extend(capsys.readouterr().out.splitlines())
        assert said == ["step 1/2 [##########----------]  2.0 s  elapsed 0:00  ETA 0:02"]
    assert capsys.readouterr().out == ""  # said once: the last poll at the end finds nothing new


def test_a_line_that_is_no_record_is_named_by_its_line_in_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text(record(1, **{"timing_s/step": 9.0}) + record(2, **{"timing_s/step": 8.0}))  # a resumed run's
    with StepProgress(metrics, total_steps=4, poll_s=0.05, clock=lambda: 0.0), metrics.open("a") as handle:
        handle.write("garbage\n" + record(4, **{"timing_s/step": 2.0}))
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["step 4/4 [####################]  2.0 s  elapsed 0:00"]
    assert captured.err.splitlines() == [
        "medplay: metrics file: metrics.jsonl:row 3: field 'line': not valid JSON (Expecting value)"
    ]


def test_a_missing_metrics_file_shows_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with StepProgress(tmp_path / "absent.jsonl", total_steps=None, poll_s=3600) as progress:  # polled by hand
        progress.poll()
    assert capsys.readouterr() == ("", "")


def test_a_firing_collapse_alarm_is_a_warning_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from medical_team.game.alarm import ALARMS, AlarmAction
    from medical_team.launcher.console.progress import alarm_lines
    from medical_team.run.settings import Alarms, MonitorSettings

    alarms = {**dict.fromkeys(ALARMS), "max_self_bleu": 0.9}
    monitors = MonitorSettings(2, AlarmAction.WARN, 64, Alarms(**alarms))
    below = {"attacker/self_bleu": 0.97, "alarm/max_self_bleu": 1.0}
    firing = {"attacker/self_bleu": 0.97, "alarm/max_self_bleu": 2.0}
    assert alarm_lines(4, below, monitors) == []
    expected = (
        "medplay: collapse alarm at step 5: attacker/self_bleu = 0.97, above 0.9 "
        "(medplay.monitors.alarms.max_self_bleu) for 2 steps in a row; training goes on"
    )
    assert alarm_lines(5, firing, monitors) == [expected]
    metrics = tmp_path / "metrics.jsonl"
    metrics.touch()
    with (
        StepProgress(metrics, total_steps=5, poll_s=0.05, monitors=monitors, clock=lambda: 0.0),
        metrics.open("a") as handle,
    ):
        handle.write(record(5, **firing))
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["step 5/5 [####################]  elapsed 0:00"]
    assert captured.err.splitlines() == alarm_lines(5, firing, monitors)


def test_a_forecast_floor_is_said_on_the_first_step_line_that_has_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memory, disk = "resources/host_memory_floor_step", "resources/disk_floor_step"
    metrics = tmp_path / "metrics.jsonl"
    metrics.touch()
    progress = StepProgress(metrics, total_steps=400, poll_s=3600, clock=lambda: 0.0)
    with progress, metrics.open("a") as handle:
        for step, data in ((40, {}), (41, {memory: 340.0}), (42, {memory: 338.0, disk: 390.0}), (43, {memory: 330.0})):
            handle.write(record(step, **data))
    lines = [line.split("elapsed 0:00")[-1] for line in capsys.readouterr().out.splitlines()]  # after the clock
    assert lines == [
        "",
        "  forecast: host memory reaches its floor at step 340",
        "  forecast: the checkpoint volume's free space reaches its floor at step 390",
        "",
    ]
