"""The plain-notes reader on real CSV, JSONL and .txt files written to tmp_path."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from medical_team.common.errors import UserInputError
from medical_team.data.plain_columns import NoteColumns
from medical_team.data.plain_formats import FILE_TEXT, WHOLE_LINE, WHOLE_ROW
from medical_team.data.plain_notes import BadRow, BadRowsError, read_plain_notes


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    """A CSV written with the csv module (quotes where needed)."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def write_jsonl(path: Path, lines: list[object | str]) -> Path:
    """One line per item: a str is written as is, anything else as JSON."""
    path.write_text("".join((item if isinstance(item, str) else json.dumps(item)) + "\n" for item in lines))
    return path


def test_csv_reads_notes_in_order_with_other_columns(tmp_path):
    path = write_csv(
        tmp_path / "notes.csv",
        ["site", "note_id", "note"],
        [["A", "n1", "Patient febrile.\r\nGiven paracetamol."], ["B", " n2 ", "  Stable.  "]],
    )
    result = read_plain_notes(path)
    assert [(n.note_id, n.text, n.location, dict(n.columns)) for n in result.notes] == [
        ("n1", "Patient febrile.\nGiven paracetamol.", "notes.csv row 1", {"site": "A"}),
        ("n2", "Stable.", "notes.csv row 2", {"site": "B"}),
    ]
    assert result.skipped == () and result.ignored == ()


def test_csv_column_names_are_options_and_match_ignoring_case(tmp_path):
    path = write_csv(tmp_path / "notes.csv", ["Case", " Report Text "], [["c1", "Text one."]])
    result = read_plain_notes(path, id_field="case", text_field="report text")
    assert [(n.note_id, n.text) for n in result.notes] == [("c1", "Text one.")]


def test_csv_missing_column_names_it_and_the_header_found(tmp_path):
    path = write_csv(tmp_path / "notes.csv", ["case", "report"], [["1", "x"]])
    with pytest.raises(UserInputError) as caught:
        read_plain_notes(path)
    error = caught.value
    assert (error.file, error.row, error.field) == ("notes.csv", 0, "note_id")
    assert error.message == (
        "neither column 'note_id' nor 'id' is in the header (found: 'case', 'report'); name the column with --id-column"
    )
    with pytest.raises(UserInputError) as caught:
        read_plain_notes(path, id_field="case")
    assert caught.value.field == "note" and "neither column 'note' nor 'text'" in caught.value.message
    assert "--text-column" in caught.value.message


@pytest.mark.parametrize(
    ("header", "columns"),
    [
        (["id", "text"], ("id", "text")),
        (["ID", "Text", "site"], ("ID", "Text")),  # case and outer spaces aside, as for a named column
        (["text", "note_id", "id"], ("note_id", "text")),  # medplay's own name first
        (["note", "id", "text", "note_id"], ("note_id", "note")),
    ],
)
def test_csv_without_named_columns_takes_note_id_and_note_else_id_and_text(tmp_path, header, columns):
    rows = [
        [{"id": "c1", "note_id": "n1", "text": "Text one.", "note": "Note one."}.get(h.casefold(), "A") for h in header]
    ]
    path = write_csv(tmp_path / "notes.csv", header, rows)
    result = read_plain_notes(path)
    assert result.columns == NoteColumns(*columns, found=("--id-column", "--text-column"))
    assert (result.notes[0].note_id, result.notes[0].text) == (
        rows[0][header.index(columns[0])],
        rows[0][header.index(columns[1])],
    )
    assert result.columns.found_line("notes.csv") == (
        f"notes.csv: ids from column {columns[0]!r}, texts from column {columns[1]!r} (found in the file; "
        "--id-column and --text-column name others)"
    )


def test_csv_one_named_column_and_one_found(tmp_path):
    path = write_csv(tmp_path / "notes.csv", ["case", "text"], [["c1", "Text one."]])
    result = read_plain_notes(path, id_field="case")
    assert result.columns == NoteColumns("case", "text", found=("--text-column",))
    assert result.columns.found_line("notes.csv") == (
        "notes.csv: texts from column 'text' (found in the file; --text-column names another)"
    )
    named = read_plain_notes(path, id_field="case", text_field="text")
    assert named.columns == NoteColumns("case", "text") and named.columns.found_line("notes.csv") is None


def test_csv_empty_file_is_refused(tmp_path):
    path = tmp_path / "notes.csv"
    path.write_text("")
    with pytest.raises(UserInputError, match="no header"):
        read_plain_notes(path)


def test_csv_refuse_lists_every_bad_row_at_once(tmp_path):
    path = write_csv(
        tmp_path / "notes.csv",
        ["note_id", "note"],
        [["n1", "ok"], ["n2", "   "], ["", "no id"], ["n1", "again"], ["n5", "fine"]],
    )
    with pytest.raises(BadRowsError) as caught:
        read_plain_notes(path)
    assert caught.value.bad_rows == (
        BadRow("notes.csv", 2, "note", "the text is empty"),
        BadRow("notes.csv", 3, "note_id", "the id is missing or empty"),
        BadRow("notes.csv", 4, "note_id", "duplicate id 'n1' (first at notes.csv row 1)"),
    )
    message = str(caught.value)
    for where in ("notes.csv row 2, field 'note'", "notes.csv row 3, field 'note_id'", "notes.csv row 4"):
        assert where in message
    assert "--on-bad-row skip" in message


def test_csv_skip_returns_the_bad_rows_and_keeps_the_rest(tmp_path):
    path = write_csv(tmp_path / "notes.csv", ["note_id", "note"], [["n1", "ok"], ["n2", ""], ["n3", "fine"]])
    result = read_plain_notes(path, on_bad_row="skip")
    assert [n.note_id for n in result.notes] == ["n1", "n3"]
    assert result.skipped == (BadRow("notes.csv", 2, "note", "the text is empty"),)


def test_csv_row_with_extra_fields_and_blank_lines(tmp_path):
    path = tmp_path / "notes.csv"
    path.write_text("note_id,note\nn1,ok\n\nn2,one, two\nn3,short\n")
    result = read_plain_notes(path, on_bad_row="skip")
    assert [(n.note_id, n.location) for n in result.notes] == [("n1", "notes.csv row 1"), ("n3", "notes.csv row 4")]
    assert [(b.row, b.field) for b in result.skipped] == [(3, WHOLE_ROW)]
    assert result.ignored == ("notes.csv row 2 (blank)",)


def test_csv_undecodable_bytes_name_the_row_and_field(tmp_path):
    path = tmp_path / "notes.csv"
    path.write_bytes(b"note_id,note\nn1,ok\nn2,caf\xe9 au lait\n")
    with pytest.raises(BadRowsError) as caught:
        read_plain_notes(path)
    (bad,) = caught.value.bad_rows
    assert (bad.file, bad.row, bad.field) == ("notes.csv", 2, "note") and "0xe9" in bad.reason
    assert (caught.value.file, caught.value.row, caught.value.field) == ("notes.csv", 2, "note")
    result = read_plain_notes(path, encoding="cp1252")
    assert result.notes[1].text == "café au lait"


def test_jsonl_reads_notes_and_string_fields(tmp_path):
    path = write_jsonl(
        tmp_path / "notes.jsonl",
        [{"note_id": "a", "note": "First.", "site": "X", "age": 40}, "", {"note_id": 7, "note": "Second."}],
    )
    result = read_plain_notes(path)
    assert [(n.note_id, n.text, n.location, dict(n.columns)) for n in result.notes] == [
        ("a", "First.", "notes.jsonl line 1", {"site": "X"}),
        ("7", "Second.", "notes.jsonl line 3", {}),
    ]
    assert result.ignored == ("notes.jsonl line 2 (blank)",)


def test_jsonl_bad_lines_are_named(tmp_path):
    path = write_jsonl(
        tmp_path / "notes.jsonl",
        [
            {"note_id": "a", "note": "ok"},
            "{not json",
            ["a", "list"],
            {"note": "no id"},
            {"note_id": "d", "note": 5},
            {"note_id": True, "note": "bool id"},
            {"note_id": "a", "note": "again"},
        ],
    )
    result = read_plain_notes(path, on_bad_row="skip")
    assert [n.note_id for n in result.notes] == ["a"]
    assert [(b.row, b.field) for b in result.skipped] == [
        (2, WHOLE_LINE),
        (3, WHOLE_LINE),
        (4, "note_id"),
        (5, "note"),
        (6, "note_id"),
        (7, "note_id"),
    ]
    assert "not JSON" in result.skipped[0].reason
    assert "the line has: note" in result.skipped[2].reason
    assert "duplicate id 'a' (first at notes.jsonl line 1)" == result.skipped[5].reason


def test_jsonl_without_named_fields_takes_id_and_text_and_says_so(tmp_path):
    path = write_jsonl(
        tmp_path / "notes.jsonl", [{"id": 1, "text": "First.", "source": "S"}, {"id": "b", "text": "2nd."}]
    )
    result = read_plain_notes(path)
    assert [(n.note_id, n.text, dict(n.columns)) for n in result.notes] == [
        ("1", "First.", {"source": "S"}),
        ("b", "2nd.", {}),
    ]
    assert result.columns == NoteColumns("id", "text", found=("--id-column", "--text-column"), unit="field")
    assert result.columns.found_line("notes.jsonl") == (
        "notes.jsonl: ids from field 'id', texts from field 'text' (found in the file; --id-column and --text-column "
        "name others)"
    )


def test_jsonl_with_neither_name_is_refused_as_before(tmp_path):
    path = write_jsonl(tmp_path / "notes.jsonl", [{"case": "c1", "body": "First."}, {"case": "c2", "body": "Second."}])
    with pytest.raises(BadRowsError) as caught:
        read_plain_notes(path)
    assert [(b.row, b.field) for b in caught.value.bad_rows] == [(1, "note_id"), (2, "note_id")]
    assert "the field is missing (the line has: case, body)" in caught.value.bad_rows[0].reason
    named = read_plain_notes(path, id_field="case", text_field="body")
    assert [n.note_id for n in named.notes] == ["c1", "c2"] and named.columns.found == ()


def test_folder_of_txt_files(tmp_path):
    folder = tmp_path / "cases"
    folder.mkdir()
    (folder / "b.txt").write_text("Note B.\n")
    (folder / "a.txt").write_text("Note A.")
    (folder / "empty.txt").write_text("\n \n")
    (folder / "readme.md").write_text("not a note")
    (folder / "sub").mkdir()
    (folder / "latin.txt").write_bytes(b"fi\xe8vre")
    result = read_plain_notes(folder, on_bad_row="skip")
    assert [(n.note_id, n.text, n.location) for n in result.notes] == [
        ("a", "Note A.", "cases/a.txt"),
        ("b", "Note B.", "cases/b.txt"),
    ]
    assert [(b.file, b.row, b.field) for b in result.skipped] == [
        ("cases/empty.txt", None, FILE_TEXT),
        ("cases/latin.txt", None, FILE_TEXT),
    ]
    assert result.ignored == (
        "cases/readme.md (not a .txt file)",
        "cases/sub (a folder; only .txt files directly inside are read)",
    )
    assert result.columns is None  # a file's name is its id: no column to find
    with pytest.raises(BadRowsError, match="cases/empty.txt, field '\\(file text\\)': the file is empty"):
        read_plain_notes(folder)


def test_folder_without_txt_files_names_what_it_found(tmp_path):
    (tmp_path / "notes.docx").write_bytes(b"PK")
    with pytest.raises(UserInputError, match="no .txt files.*notes.docx"):
        read_plain_notes(tmp_path)


def test_every_row_bad_is_refused_even_when_skipping(tmp_path):
    path = write_csv(tmp_path / "notes.csv", ["note_id", "note"], [["n1", ""]])
    with pytest.raises(BadRowsError):
        read_plain_notes(path, on_bad_row="skip")


@pytest.mark.parametrize(
    ("name", "kwargs", "field"),
    [
        ("missing.csv", {}, "--input"),
        ("notes.xlsx", {}, "--input"),
        ("notes.csv", {"encoding": "no-such-codec"}, "--encoding"),
        ("notes.csv", {"on_bad_row": "ignore"}, "--on-bad-row"),
    ],
)
def test_input_errors_name_the_option(tmp_path, name, kwargs, field):
    for existing in ("notes.xlsx", "notes.csv"):
        (tmp_path / existing).write_text("note_id,note\nn1,x\n")
    with pytest.raises(UserInputError) as caught:
        read_plain_notes(tmp_path / name, **kwargs)
    assert caught.value.field == field
