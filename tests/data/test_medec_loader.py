"""The MEDEC loader on the bundled files and on small CSVs with every quirk docs/data.md ("Loading MEDEC CSVs") lists."""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import astuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from medec_rows import HEADER, clean_row, error_row

from medical_team.common.errors import UserInputError
from medical_team.data.medec import (
    REPAIR_MOJIBAKE,
    REPAIR_NEWLINES,
    REPAIR_TRAILING_BLANKS,
    SKIP_EMPTY_ROW,
    load_medec,
)
from medical_team.data.medec_csv import parse_csv
from medical_team.data.text import same_text

MOJIBAKE = ("â€", "Î¼")


def test_validation_file_counts(validation_result):
    notes = validation_result.notes
    assert len(notes) == 574
    assert Counter(note.error_flag for note in notes) == {True: 319, False: 255}
    assert Counter(note.error_type for note in notes if note.error_flag) == {
        "diagnosis": 86,
        "management": 168,
        "treatment": 25,
        "pharmacotherapy": 27,
        "causalOrganism": 13,
    }
    assert [note.text_id for note in notes] == [f"ms-val-{k}" for k in range(574)]
    assert validation_result.skipped == {}
    assert validation_result.repaired == {REPAIR_MOJIBAKE: 124}


def test_test_file_drops_and_counts_empty_rows(test_result):
    assert len(test_result.notes) == 597
    assert test_result.skipped == {SKIP_EMPTY_ROW: 328}
    assert test_result.rows_read == 925
    assert Counter(note.error_flag for note in test_result.notes) == {True: 311, False: 286}
    assert test_result.repaired[REPAIR_NEWLINES] == 597


def test_no_output_text_keeps_mojibake_or_carriage_returns(validation_result, test_result):
    for note in validation_result.notes + test_result.notes:
        for value in astuple(note):
            for text in value if isinstance(value, tuple) else (value,):
                if isinstance(text, str):
                    assert not any(bad in text for bad in MOJIBAKE), (note.text_id, text)
                    assert "\r" not in text


def test_mojibake_is_repaired_to_the_intended_characters(validation_result):
    joined = " ".join(note.text for note in validation_result.notes)
    assert "μ" in joined and "–" in joined


def test_error_sentence_id_points_at_the_error_sentence(validation_result, test_result):
    for note in validation_result.notes + test_result.notes:
        if note.error_flag:
            assert same_text(note.sentences[note.error_sentence_id], note.error_sentence)
        else:
            assert note.error_sentence_id == -1
            assert note.error_sentence is note.corrected_sentence is note.corrected_text is note.error_type is None


def test_source_rows_are_one_based_data_rows(test_result):
    assert [note.source_row for note in test_result.notes[:3]] == [1, 2, 3]
    assert test_result.notes[0].source_file.startswith("MEDEC-MS-TestSet")


def test_continuation_lines_join_the_current_sentence(write_csv):
    row = error_row(0)
    row[2] = "0 A 60-year-old man\nhas chest pain.\n\n1 He is given ibuprofen."
    note = load_medec(write_csv([row])).notes[0]
    assert note.sentences == ("A 60-year-old man has chest pain.", "He is given ibuprofen.")


def test_columns_are_mapped_by_name_with_leading_index_and_no_error_type(write_csv):
    order = [HEADER[i] for i in (3, 0, 2, 1, 5, 6, 7, 8)]  # shuffled, without "Error Type"

    def reorder(row: list[str]) -> list[str]:
        by_name = dict(zip(HEADER, row))
        return [str(position)] + [by_name[name] for name in order]

    rows = []
    for position, row in enumerate([error_row(0), clean_row(1)]):
        rows.append(reorder(row))
    result = load_medec(write_csv(rows, header=["", *order]))
    assert [note.text_id for note in result.notes] == ["ms-t-0", "ms-t-1"]
    assert result.notes[0].error_type is None
    assert result.notes[0].error_sentence == "He is given ibuprofen."
    assert result.ignored_columns == ("Unnamed: 0",)


def test_crlf_rows_and_cells_are_normalised(write_csv):
    result = load_medec(write_csv([error_row(0), clean_row(1)], newline="\r\n"))
    row = error_row(0)
    row[2] = row[2].replace("\n", "\r\n")
    crlf_cells = load_medec(write_csv([row], name="cells.csv", newline="\r\n"))
    assert result.notes[0].sentences == crlf_cells.notes[0].sentences
    assert crlf_cells.repaired == {REPAIR_NEWLINES: 1}


def test_blank_lines_and_empty_records_are_counted_not_kept(tmp_path, write_csv):
    path = write_csv([error_row(0), [""] * 9, clean_row(1), [""] * 9])
    path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    result = load_medec(path)
    assert len(result.notes) == 2
    assert result.skipped == {SKIP_EMPTY_ROW: 3}


def test_cp1252_files_load_with_the_encoding_option(tmp_path, write_csv):
    row = error_row(0)
    row[1] = row[1].replace("chest pain", "chest pain – severe")
    row[2] = row[2].replace("chest pain", "chest pain – severe")
    utf8 = write_csv([row])
    cp1252 = tmp_path / "old.csv"
    cp1252.write_bytes(utf8.read_text(encoding="utf-8").encode("cp1252"))
    with pytest.raises(UserInputError) as caught:
        load_medec(cp1252)
    assert (caught.value.file, caught.value.row, caught.value.field) == ("old.csv", 1, "Text")
    assert load_medec(cp1252, encoding="cp1252").notes[0].text == load_medec(utf8).notes[0].text


@pytest.mark.parametrize(
    ("column", "value", "field", "words"),
    [
        ("Error Flag", "yes", "Error Flag", "integer"),
        ("Error Flag", "3", "Error Flag", "0 or 1"),
        ("Error Sentence ID", "5", "Error Sentence ID", "not a sentence"),
        ("Error Type", "dosage", "Error Type", "unknown error type"),
        ("Sentences", "first\nsecond", "Sentences", "sentence number 0"),
        ("Text", "NA", "Text", "empty"),
    ],
)
def test_bad_cells_name_file_row_and_field(write_csv, column, value, field, words):
    bad = error_row(2)
    bad[HEADER.index(column)] = value
    with pytest.raises(UserInputError) as caught:
        load_medec(write_csv([error_row(0), clean_row(1), bad], name="bad.csv"))
    error = caught.value
    assert (error.file, error.row, error.field) == ("bad.csv", 3, field)
    assert words in error.message


def test_missing_required_column(write_csv):
    header = [name for name in HEADER if name != "Sentences"]
    rows = [[cell for name, cell in zip(HEADER, error_row(0)) if name != "Sentences"]]
    with pytest.raises(UserInputError) as caught:
        load_medec(write_csv(rows, header=header))
    assert (caught.value.row, caught.value.field) == (0, "Sentences")


def test_empty_and_missing_files(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    with pytest.raises(UserInputError, match="empty"):
        load_medec(empty)
    with pytest.raises(UserInputError, match="no such file"):
        load_medec(tmp_path / "absent.csv")


def test_short_rows_are_filled_with_blanks_and_counted(write_csv):
    path = write_csv([error_row(0)])
    short_row = "ms-t-1,A clean note.,0 A clean note.,0,NA,-1\n"  # the last three fields are missing
    path.write_text(path.read_text(encoding="utf-8") + short_row, encoding="utf-8")
    result = load_medec(path)
    assert [note.text_id for note in result.notes] == ["ms-t-0", "ms-t-1"]
    assert result.repaired == {REPAIR_TRAILING_BLANKS: 1}
    assert result.notes[1].corrected_text is None


def test_a_repeated_or_blank_header_name_is_ignored_under_pandas_name(write_csv):
    header = [*HEADER, "Text", ""]
    result = load_medec(write_csv([[*error_row(0), "other text", "7"]], header=header))
    assert result.notes[0].text == error_row(0)[1]
    assert result.ignored_columns == ("Text.1", "Unnamed: 10")


def test_a_first_row_longer_than_the_header_starts_with_an_index(write_csv):
    result = load_medec(write_csv([["0", *error_row(0)], ["1", *clean_row(1)], ["2"]]))
    assert [note.text_id for note in result.notes] == ["ms-t-0", "ms-t-1"]
    assert result.skipped == {SKIP_EMPTY_ROW: 1} and result.ignored_columns == ()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["", "a", "a.1", "a.2", "b", "Unnamed: 0", "Unnamed: 1"]), min_size=1, max_size=6))
def test_column_names_are_the_ones_pandas_gives(header):
    import pandas as pd

    text = io.StringIO(newline="")
    csv.writer(text).writerows([header, [str(position) for position in range(len(header))]])
    expected = pd.read_csv(io.StringIO(text.getvalue()), dtype=str, keep_default_na=False, na_filter=False)
    assert parse_csv(text.getvalue(), "names.csv").names == list(expected.columns)
