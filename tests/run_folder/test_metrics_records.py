"""The one reader of the metrics JSONL: torn last line skipped, a bad line named by file and line, a step's records merged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medical_team.common.errors import UserInputError
from medical_team.run_folder.metrics_records import read_step_records


def record(step: int, **data: float) -> str:
    return json.dumps({"step": step, "data": data}) + "\n"


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    whole = record(2, **{"timing_s/step": 3.0})
    path.write_text(record(1, **{"timing_s/step": 4.0}) + whole[: len(whole) // 2])  # the run is writing step 2
    records = read_step_records(path)
    assert records.steps == {1: {"timing_s/step": 4.0}}
    assert records.torn and records.last_step == 1


def test_a_whole_last_record_without_its_newline_is_read(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text(record(1, loss=1.0) + record(2, loss=0.5).rstrip("\n"))
    records = read_step_records(path)
    assert records.steps == {1: {"loss": 1.0}, 2: {"loss": 0.5}} and not records.torn


def test_a_torn_multibyte_character_is_a_torn_line_too(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(record(1, loss=1.0).encode() + '{"step": 2, "data": {"é'.encode()[:-1])
    assert read_step_records(path).steps == {1: {"loss": 1.0}}


@pytest.mark.parametrize(
    ("bad", "where"),
    [
        ('{"step": 2, "data": {"loss": 0.', "metrics.jsonl:row 2: field 'line': not valid JSON"),
        ('{"step": "two", "data": {}}', "metrics.jsonl:row 2: field 'step'"),
        ('{"step": 2, "metrics": {}}', "metrics.jsonl:row 2: field 'data'"),
    ],
)
def test_a_bad_line_in_the_middle_is_named_by_file_and_line(tmp_path: Path, bad: str, where: str) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text(record(1, loss=1.0) + bad + "\n" + record(3, loss=0.2))
    with pytest.raises(UserInputError) as caught:
        read_step_records(path)
    assert str(caught.value).startswith(where)


def test_a_bad_complete_last_line_is_an_error_not_a_torn_one(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text(record(1, loss=1.0) + "garbage\n")
    with pytest.raises(UserInputError, match="row 2"):
        read_step_records(path)


def test_the_records_of_a_step_merge_later_keys_winning(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    lines = [
        record(1, loss=1.0),
        record(2, loss=0.9, lr=0.1),
        record(3, loss=0.8),
        record(2, loss=0.7),  # a resumed run replays step 2
        record(2, **{"val/loss": 0.6}),  # a record of its own for validation
    ]
    path.write_text("\n".join(lines))  # blank lines between records are skipped
    records = read_step_records(path)
    assert records.steps == {1: {"loss": 1.0}, 2: {"loss": 0.7, "lr": 0.1, "val/loss": 0.6}, 3: {"loss": 0.8}}
    assert list(records.steps) == [1, 2, 3]
    assert records.repeated == 2 and records.last_step == 2 and not records.torn


def test_a_missing_file_is_the_callers_to_handle(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_step_records(tmp_path / "absent.jsonl")
