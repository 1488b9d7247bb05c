"""A resumed run's metrics file holds each step once; the replayed steps' records are moved aside, not lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medical_team.common.errors import UserInputError
from medical_team.reliability.replayed_steps import replayed_file, set_aside_replayed_steps
from medical_team.run_folder.metrics_records import read_step_records


def record(step: int, loss: float) -> str:
    return json.dumps({"step": step, "data": {"actor/pg_loss": loss}})


def write(path: Path, lines: list[str], tail: str = "") -> None:
    path.write_text("".join(f"{line}\n" for line in lines) + tail)


def test_records_after_the_resume_step_move_to_the_side_file(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics.jsonl"
    write(metrics, [record(step, step / 10) for step in range(1, 8)], tail='{"step": 8, "da')  # killed mid-line
    assert set_aside_replayed_steps(metrics, resume_step=5) == 3
    assert metrics.read_text() == "".join(f"{record(step, step / 10)}\n" for step in range(1, 6))
    side = replayed_file(metrics)
    assert side == tmp_path / "metrics.replayed.jsonl"
    assert side.read_text() == f'{record(6, 0.6)}\n{record(7, 0.7)}\n{{"step": 8, "da\n'


def test_a_second_resume_appends_and_the_replay_leaves_each_step_once(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics.jsonl"
    write(metrics, [record(step, 1.0) for step in (1, 2, 3, 4)])
    set_aside_replayed_steps(metrics, resume_step=2)
    with metrics.open("a") as file:  # the resumed run replays 3 and 4 and goes on to 6, then is killed again
        file.write("".join(f"{record(step, 2.0)}\n" for step in (3, 4, 5, 6)))
    assert set_aside_replayed_steps(metrics, resume_step=4) == 2
    records = read_step_records(metrics)
    assert list(records.steps) == [1, 2, 3, 4] and records.repeated == 0
    assert records.steps[3] == {"actor/pg_loss": 2.0}  # the resumed trajectory's step 3, not the first one's
    side = [json.loads(line)["step"] for line in replayed_file(metrics).read_text().splitlines()]
    assert side == [3, 4, 5, 6]


def test_from_scratch_every_record_moves(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics.jsonl"
    write(metrics, [record(1, 1.0), record(2, 1.0)])
    assert set_aside_replayed_steps(metrics, resume_step=None) == 2
    assert metrics.read_text() == ""
    assert len(replayed_file(metrics).read_text().splitlines()) == 2


def test_nothing_to_move_touches_nothing(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics.jsonl"
    assert set_aside_replayed_steps(metrics, resume_step=3) == 0  # no file yet
    write(metrics, [record(1, 1.0), "", record(2, 1.0)])
    before = metrics.stat().st_mtime_ns, metrics.read_text()
    assert set_aside_replayed_steps(metrics, resume_step=2) == 0
    assert (metrics.stat().st_mtime_ns, metrics.read_text()) == before
    assert not replayed_file(metrics).exists()


def test_a_malformed_line_is_named_and_nothing_moves(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics.jsonl"
    write(metrics, [record(1, 1.0), "not json", record(3, 1.0)])
    before = metrics.read_text()
    with pytest.raises(UserInputError) as raised:
        set_aside_replayed_steps(metrics, resume_step=1)
    assert str(raised.value) == "metrics.jsonl:row 2: field 'line': not valid JSON (Expecting value)"
    assert metrics.read_text() == before and not replayed_file(metrics).exists()
