"""`medplay convert --notes`: plain notes (no labels) through argv into verl files, the report, and clear errors."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest
from plain_notes_files import write_plain_csv

from medical_team.cli import main
from medical_team.data.medec import TEST_CSV, bundled_csv, load_medec
from medical_team.data.sentences import split_sentences
from medical_team.data.sft_parquet import read_sft_parquet
from medical_team.data.verl_parquet import read_verl_parquet, validate_verl_parquet


def _convert(notes: Path, out: Path, *options: str) -> int:
    return main(["convert", "--notes", str(notes), "--output", str(out), "--benchmark-notes", "3", *options])


def _report(out: Path) -> dict:
    return json.loads((out / "dataset_report.json").read_text(encoding="utf-8"))


def test_clean_only_notes_with_sequential_ids_convert_into_adversarial_games(tmp_path, capsys):
    notes = write_plain_csv(tmp_path / "notes.csv", 4)
    assert _convert(notes, tmp_path / "out") == 0
    out = capsys.readouterr().out
    assert "unlabelled" in out and "4 case groups (one note per case)" in out and "sentencex 1.0.32" in out
    rows = [
        *read_verl_parquet(tmp_path / "out" / "train.parquet"),
        *read_verl_parquet(tmp_path / "out" / "val.parquet"),
    ]
    for name in ("train.parquet", "val.parquet", "benchmark.parquet"):
        assert validate_verl_parquet(tmp_path / "out" / name) == []
    assert sorted(row["extra_info"]["note_id"] for row in rows) == ["n1", "n2", "n3", "n4"]
    for row in rows:
        info = row["extra_info"]
        assert info["category"] == "adversarial_benign" and info["benign_mode"] == "inject"
        assert list(info["sentences"]) == list(split_sentences(info["text"]))
    report = _report(tmp_path / "out")
    assert report["input_shape"] == "plain_notes"
    assert report["inputs"][0] | {"ignored": []} == {
        "file": "notes.csv",
        "rows_read": 4,
        "notes": 4,
        "labels": "none",
        "error_notes": None,
        "clean_notes": None,
        "rows_skipped": 0,
        "skipped": {},
        "skipped_rows": [],
        "rows_repaired": {},
        "ignored": [],
    }
    assert report["splits"]["train"]["case_groups"] == 3 and report["splits"]["val"]["case_groups"] == 1
    assert report["benchmark"]["file"] == TEST_CSV and report["files"]["benchmark.parquet"] == 3
    assert report["sentences"]["total"] == sum(len(row["extra_info"]["sentences"]) for row in rows)
    assert "sft_train.parquet" not in report["files"] and not (tmp_path / "out" / "sft_train.parquet").exists()


def test_notes_asserted_clean_add_vanilla_games_and_sft_files(tmp_path):
    out = tmp_path / "out"
    assert main(["convert", "--output", str(out), "--benchmark-notes", "3"]) == 0  # MEDEC first: SFT files exist
    notes = write_plain_csv(tmp_path / "notes.csv", 10, per_patient=2)
    assert _convert(notes, out, "--notes-are-clean", "--group-column", "patient", "--benign-mode", "decoy") == 0
    report = _report(out)
    assert {category: counts["total"] for category, counts in report["seeds"]["by_category"].items()} == {
        "vanilla_harmful": 0,
        "vanilla_benign": 5,
        "adversarial_harmful": 0,
        "adversarial_benign": 5,
    }
    assert report["splits"]["train"]["case_groups"] + report["splits"]["val"]["case_groups"] == 5
    assert report["inputs"][0]["clean_notes"] == 10 and report["options"]["group_column"] == "patient"
    sft_notes = {row["extra_info"]["note_id"] for row in read_sft_parquet(out / "sft_train.parquet")}
    assert sft_notes and sft_notes <= {f"n{i}" for i in range(1, 11)}
    # A later conversion of unasserted notes into the same folder leaves no SFT file that is not its own.
    assert _convert(notes, out) == 0
    assert not (out / "sft_train.parquet").exists() and not (out / "sft_val.parquet").exists()


def test_bad_rows_are_refused_with_file_row_and_field_or_skipped_and_listed(tmp_path, capsys):
    notes = write_plain_csv(tmp_path / "notes.csv", 5)
    lines = notes.read_text(encoding="utf-8").splitlines(keepends=True)
    notes.write_text("".join(lines) + 'n6,"   ",p6\n', encoding="utf-8")
    assert _convert(notes, tmp_path / "out") == 2
    assert "medplay convert: error: notes.csv:row 6: field 'note': " in capsys.readouterr().err
    assert _convert(notes, tmp_path / "out", "--on-bad-row", "skip") == 0
    assert "skipped: notes.csv row 6, field 'note': the text is empty" in capsys.readouterr().out
    summary = _report(tmp_path / "out")["inputs"][0]
    assert (summary["rows_read"], summary["notes"], summary["rows_skipped"]) == (6, 5, 1)
    assert summary["skipped_rows"] == ["notes.csv row 6, field 'note': the text is empty"]


def test_fewer_than_two_case_groups_is_a_clear_error(tmp_path, capsys):
    one = write_plain_csv(tmp_path / "one.csv", 1)
    assert _convert(one, tmp_path / "out") == 2
    assert "one.csv: field '--notes': the notes form 1 case group (one note per case); " in capsys.readouterr().err
    same_patient = write_plain_csv(tmp_path / "same.csv", 3, per_patient=3)
    assert _convert(same_patient, tmp_path / "out", "--group-column", "patient") == 2
    err = capsys.readouterr().err
    assert (
        "field '--group-column': the notes form 1 case group (by 'patient'); the train/val split needs at least 2"
        in err
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--include-clean-notes"], "field '--include-clean-notes': is for MEDEC CSVs"),
        (["--input", "x.csv"], "field '--notes': give MEDEC CSVs (--input) or plain notes (--notes), not both"),
    ],
)
def test_medec_only_options_are_refused_with_notes(options, message, tmp_path, capsys):
    notes = write_plain_csv(tmp_path / "notes.csv", 3)
    assert _convert(notes, tmp_path / "out", *options) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out" / "train.parquet").exists()


@pytest.mark.parametrize("option", [["--group-column", "patient"], ["--notes-are-clean"], ["--id-column", "id"]])
def test_plain_options_without_notes_are_refused(option, tmp_path, capsys):
    assert main(["convert", "--output", str(tmp_path), *option]) == 2
    assert f"field '{option[0]}': applies to plain notes only" in capsys.readouterr().err


def test_a_benchmark_note_among_the_plain_notes_is_refused(tmp_path, capsys):
    benchmark_text = load_medec(bundled_csv(TEST_CSV)).notes[7].text
    notes = write_plain_csv(tmp_path / "notes.csv", 3)
    notes.write_text(notes.read_text(encoding="utf-8") + f'n4,"{benchmark_text}",p4\n', encoding="utf-8")
    assert _convert(notes, tmp_path / "out") == 2
    assert "notes.csv:row 4: field 'note': the text is benchmark note 'ms-test-7'" in capsys.readouterr().err


def test_a_csv_of_id_and_text_converts_and_says_which_columns_it_read(tmp_path, capsys):
    source = tmp_path / "source.csv"
    write_plain_csv(source, 4)
    with source.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))[1:]
    notes = tmp_path / "export.csv"
    with notes.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows([["id", "text", "patient"], *rows])
    assert _convert(notes, tmp_path / "out") == 0
    assert capsys.readouterr().out.startswith(
        "export.csv: ids from column 'id', texts from column 'text' (found in the file; --id-column and --text-column "
        "name others)\n"
    )
    report = _report(tmp_path / "out")
    assert report["columns"] == {
        "id": "id",
        "text": "text",
        "found": ["--id-column", "--text-column"],
        "unit": "column",
    }
    assert report["options"]["id_column"] is None and report["options"]["text_column"] is None
    rows = [
        *read_verl_parquet(tmp_path / "out" / "train.parquet"),
        *read_verl_parquet(tmp_path / "out" / "val.parquet"),
    ]
    assert sorted(row["extra_info"]["note_id"] for row in rows) == ["n1", "n2", "n3", "n4"]


def test_jsonl_and_txt_folders_convert_with_their_own_columns(tmp_path):
    jsonl = tmp_path / "notes.jsonl"
    texts = [f"Visit {i}. The patient is stable. Continue metformin 500 mg b.i.d." for i in range(6)]
    jsonl.write_text(
        "".join(json.dumps({"id": f"v{i}", "body": text, "mrn": f"m{i % 3}"}) + "\n" for i, text in enumerate(texts)),
        encoding="utf-8",
    )
    options = ("--id-column", "id", "--text-column", "body", "--group-column", "mrn")
    assert _convert(jsonl, tmp_path / "json", *options) == 0
    assert _report(tmp_path / "json")["splits"]["val"]["case_groups"] == 1
    assert _report(tmp_path / "json")["columns"] == {"id": "id", "text": "body", "found": [], "unit": "field"}
    folder = tmp_path / "letters"
    folder.mkdir()
    for i, text in enumerate(texts[:3]):
        (folder / f"letter{i}.txt").write_text(text, encoding="utf-8")
    assert _convert(folder, tmp_path / "txt") == 0
    categories = Counter(row["extra_info"]["category"] for row in read_verl_parquet(tmp_path / "txt" / "train.parquet"))
    assert categories == {"adversarial_benign": 2}


def test_plain_notes_given_as_medec_input_are_pointed_to_notes(tmp_path, capsys):
    notes = write_plain_csv(tmp_path / "notes.csv", 3)
    assert main(["convert", "--input", str(notes), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("medplay convert: error: notes.csv:row 0: field 'Text ID': required column is missing")
    assert err.rstrip().endswith("notes without MEDEC's labels convert with --notes FILE (docs/data.md)")
