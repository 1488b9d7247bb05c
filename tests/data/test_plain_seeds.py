"""Plain notes as game seeds: sentence numbering, case groups and the categories they give (docs/data.md)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from medical_team.common.errors import UserInputError
from medical_team.common.vocab import Category, Label
from medical_team.data.plain_notes import read_plain_notes
from medical_team.data.plain_seeds import note_origin, plain_case_groups, plain_seeds
from medical_team.data.sentences import split_sentences
from medical_team.data.splits import split_seeds

CLINICAL = (
    "A 54-year-old man was seen by Dr. Smith for chest pain. He takes amoxicillin 500 mg p.o. t.i.d. and "
    "aspirin 81 mg daily. Creatinine is 5.5 mg/dL, up from 1.2 mg/dL. The patient (a 60 y.o. male) denies fever.\n"
    "Assessment and plan\n1) Sepsis - continue cefepime\n2) AKI - hold lisinopril"
)


def _csv(path: Path, rows: list[tuple[str, ...]], header: tuple[str, ...] = ("note_id", "note")) -> Path:
    import csv

    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_sentences_are_numbered_through_clinical_abbreviations_and_lists():
    assert split_sentences(CLINICAL) == (
        "A 54-year-old man was seen by Dr. Smith for chest pain.",
        "He takes amoxicillin 500 mg p.o. t.i.d. and aspirin 81 mg daily.",
        "Creatinine is 5.5 mg/dL, up from 1.2 mg/dL.",
        "The patient (a 60 y.o. male) denies fever.",
        "Assessment and plan",
        "1) Sepsis - continue cefepime",
        "2) AKI - hold lisinopril",
    )


def test_numbering_keeps_every_character_of_every_bundled_note(validation_result, test_result):
    for note in validation_result.notes + test_result.notes:
        sentences = split_sentences(note.text)
        assert sentences and all(sentence == sentence.strip() and sentence for sentence in sentences)
        assert "".join("".join(sentences).split()) == "".join(note.text.split()), note.text_id


def test_a_note_without_end_punctuation_is_one_sentence():
    assert split_sentences("  no full stop here\n") == ("no full stop here",)


def test_each_plain_note_is_an_adversarial_benign_seed_with_its_sentences(tmp_path):
    path = _csv(tmp_path / "notes.csv", [("n1", CLINICAL), ("n2", "Pt. is stable. Discharge tomorrow.")])
    seeds = plain_seeds(read_plain_notes(path).notes, seed=0)
    assert [seed.category for seed in seeds] == [Category.ADVERSARIAL_BENIGN] * 2
    assert all(seed.label is Label.NO_ERROR and seed.error_sentence_id == -1 for seed in seeds)
    assert seeds[0].sentences == split_sentences(CLINICAL) and seeds[0].source_file == "notes.csv"
    assert seeds[1].sentences == ("Pt. is stable.", "Discharge tomorrow.")
    assert [seed.pair_id for seed in seeds] == ["n1", "n2"]


def test_notes_asserted_clean_give_half_vanilla_benign_games_by_the_seeded_draw(tmp_path):
    path = _csv(tmp_path / "notes.csv", [(f"n{i}", f"Note number {i} is fine.") for i in range(1, 8)])
    notes = read_plain_notes(path).notes
    counts = Counter(seed.category for seed in plain_seeds(notes, seed=0, notes_are_clean=True))
    assert counts == {Category.ADVERSARIAL_BENIGN: 3, Category.VANILLA_BENIGN: 4}
    draws = {tuple(seed.category for seed in plain_seeds(notes, seed=s, notes_are_clean=True)) for s in range(6)}
    assert len(draws) > 1  # the draw follows the seed


def test_sequential_ids_are_separate_cases_and_split_into_train_and_val(tmp_path):
    # MEDEC's rule would chain n1..n4 (clean notes joining the note numbered one below) into one group.
    path = _csv(tmp_path / "notes.csv", [(f"n{i}", f"Clean note {i}.") for i in range(1, 5)])
    notes = read_plain_notes(path).notes
    groups = plain_case_groups(notes, None)
    assert groups == {"n1": "n1", "n2": "n2", "n3": "n3", "n4": "n4"}
    split = split_seeds(plain_seeds(notes, seed=0), groups, 0.1, 0)
    assert len(split.train) == 3 and len(split.val) == 1


def test_a_group_column_keeps_a_case_in_one_split(tmp_path):
    rows = [(f"n{i}", f"Visit {i} of the patient.", f"p{i % 3}") for i in range(12)]
    notes = read_plain_notes(_csv(tmp_path / "notes.csv", rows, ("note_id", "note", "patient"))).notes
    groups = plain_case_groups(notes, "patient")
    assert set(groups.values()) == {"p0", "p1", "p2"}
    split = split_seeds(plain_seeds(notes, seed=0), groups, 0.3, 0)
    val_patients = {groups[seed.note_id] for seed in split.val}
    assert val_patients and not val_patients & {groups[seed.note_id] for seed in split.train}


def test_a_jsonl_group_field_is_read_too(tmp_path):
    path = tmp_path / "notes.jsonl"
    lines = [{"note_id": f"n{i}", "note": "Stable.", "site": "a" if i < 2 else "b"} for i in range(4)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert plain_case_groups(read_plain_notes(path).notes, "site") == {"n0": "a", "n1": "a", "n2": "b", "n3": "b"}


def test_an_empty_group_value_names_file_row_and_field(tmp_path):
    rows = [("n1", "Stable.", "p1"), ("n2", "Stable too.", " ")]
    notes = read_plain_notes(_csv(tmp_path / "notes.csv", rows, ("note_id", "note", "patient"))).notes
    with pytest.raises(UserInputError) as caught:
        plain_case_groups(notes, "patient")
    assert (caught.value.file, caught.value.row, caught.value.field) == ("notes.csv", 2, "patient")


def test_a_group_column_no_note_has_is_refused_naming_the_columns_found(tmp_path):
    notes = read_plain_notes(_csv(tmp_path / "notes.csv", [("n1", "A.", "x")], ("note_id", "note", "ward"))).notes
    with pytest.raises(UserInputError, match="no note has a column or string field 'patient'.*'ward'") as caught:
        plain_case_groups(notes, "patient")
    assert caught.value.field == "--group-column"


def test_txt_notes_have_no_row_and_no_columns_to_group_by(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.txt").write_text("Stable.", encoding="utf-8")
    notes = read_plain_notes(folder).notes
    assert note_origin(notes[0]) == ("notes/a.txt", None)
    with pytest.raises(UserInputError, match="none besides the id and the text"):
        plain_case_groups(notes, "patient")


def test_note_origin_reads_csv_rows_and_jsonl_lines(tmp_path):
    csv_note = read_plain_notes(_csv(tmp_path / "n.csv", [("a", "x."), ("b", "y.")])).notes[1]
    jsonl = tmp_path / "n.jsonl"
    jsonl.write_text('\n{"note_id": "a", "note": "x."}\n', encoding="utf-8")
    assert note_origin(csv_note) == ("n.csv", 2)
    assert note_origin(read_plain_notes(jsonl).notes[0]) == ("n.jsonl", 2)
