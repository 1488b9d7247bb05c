"""Game seeds and case groups from plain notes, which carry no label (docs/data.md, "Plain notes").

A plain note is the starting text of an `adversarial_benign` game: the attacker injects an error (`inject`) or
keeps the note correct while making it look suspicious (`decoy`), and the judge settles the truth of what it
wrote, so no label is needed. Only when the user asserts that the notes are clean is half of them (the same
seeded draw as MEDEC's) played as `vanilla_benign` games, whose truth is that assertion.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from medical_team.common.errors import UserInputError
from medical_team.common.vocab import Category, Label
from medical_team.data.plain_notes import PlainNote
from medical_team.data.records import GameSeed
from medical_team.data.seeds import assign_categories
from medical_team.data.sentences import split_sentences

# PlainNote.location: "notes.csv row 3", "notes.jsonl line 7" or "folder/a.txt" (medical_team/data/plain_notes.py).
_LOCATION = re.compile(r"^(?P<file>.*) (?:row|line) (?P<row>\d+)$")


def note_origin(note: PlainNote) -> tuple[str, int | None]:
    """(file, row) of a note: the CSV data row or JSONL line from 1; None for a `.txt` file."""
    match = _LOCATION.match(note.location)
    return (match.group("file"), int(match.group("row"))) if match else (note.location, None)


def plain_seed(note: PlainNote) -> GameSeed:
    """The note as an `adversarial_benign` seed: its text, its numbered sentences, no error fields."""
    return GameSeed(
        note_id=note.note_id,
        pair_id=note.note_id,
        category=Category.ADVERSARIAL_BENIGN,
        label=Label.NO_ERROR,  # the starting text as the attacker is told it; the judge settles the rewrite
        text=note.text,
        error_type=None,
        error_sentence_id=-1,
        error_sentence=None,
        corrected_sentence=None,
        source_file=note_origin(note)[0],
        sentences=split_sentences(note.text),
    )


def plain_seeds(notes: Sequence[PlainNote], seed: int, notes_are_clean: bool = False) -> list[GameSeed]:
    """One seed per note, in order: all `adversarial_benign`, or (clean notes) half of them drawn `vanilla_benign`."""
    seeds = [plain_seed(note) for note in notes]
    return assign_categories(seeds, seed) if notes_are_clean else seeds


def plain_case_groups(notes: Sequence[PlainNote], group_column: str | None) -> dict[str, str]:
    """Note id -> case group: the value of `group_column` (a CSV column or JSONL string field), else the note itself.

    Plain notes never use MEDEC's numbering rule (a clean note joining the note numbered one below it), which
    would chain notes `n1`, `n2`, ... into one group. A note without a value in `group_column` is refused.
    """
    if group_column is None:
        return {note.note_id: note.note_id for note in notes}
    if not any(group_column in note.columns for note in notes):
        found = sorted({name for note in notes for name in note.columns})
        listed = ", ".join(repr(name) for name in found) or "none besides the id and the text"
        file = note_origin(notes[0])[0] if notes else None
        raise UserInputError(
            f"no note has a column or string field {group_column!r} (other columns found: {listed})",
            file=file,
            field="--group-column",
        )
    groups: dict[str, str] = {}
    for note in notes:
        value = note.columns.get(group_column, "").strip()
        if not value:
            file, row = note_origin(note)
            raise UserInputError(
                "no case group: the value is empty or missing (every note needs one; leave --group-column out "
                "to make each note its own case)",
                file=file,
                row=row,
                field=group_column,
            )
        groups[note.note_id] = value
    return groups
