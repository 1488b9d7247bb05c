"""Grouped, stratified train/validation splits of game seeds."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from medical_team.common.errors import UserInputError
from medical_team.common.vocab import ERROR_TYPES
from medical_team.data.records import MedecNote
from medical_team.data.seeds import build_seeds
from medical_team.data.splits import case_groups, split_seeds, stratum_of


def make_note(number: int, error: bool, error_type: str | None) -> MedecNote:
    """A minimal note numbered like MEDEC (`ms-p-<number>`)."""
    return MedecNote(
        text_id=f"ms-p-{number}",
        text=f"Note {number}. Sentence two.",
        sentences=(f"Note {number}.", "Sentence two."),
        error_flag=error,
        error_type=error_type if error else None,
        error_sentence_id=1 if error else -1,
        error_sentence="Sentence two." if error else None,
        corrected_sentence="Sentence 2." if error else None,
        corrected_text=f"Note {number}. Sentence 2." if error else None,
        source_file="p.csv",
        source_row=number + 1,
    )


@st.composite
def note_lists(draw) -> list[MedecNote]:
    """MEDEC-like files: error notes, some followed by their clean variant (id + 1), at least two error notes."""
    notes: list[MedecNote] = []
    for _ in range(draw(st.integers(min_value=2, max_value=40))):
        notes.append(make_note(len(notes), True, draw(st.sampled_from(ERROR_TYPES))))
        if draw(st.booleans()):
            notes.append(make_note(len(notes), False, None))
    return notes


@settings(max_examples=150, deadline=None)
@given(
    notes=note_lists(),
    include_clean=st.booleans(),
    val_ratio=st.floats(min_value=0.05, max_value=0.95),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_no_note_and_no_case_straddles_splits(notes, include_clean, val_ratio, seed):
    seeds = build_seeds(notes, seed, include_clean)
    groups = case_groups(notes)
    split = split_seeds(seeds, groups, val_ratio, seed)
    train_notes = {s.note_id for s in split.train}
    val_notes = {s.note_id for s in split.val}
    assert not train_notes & val_notes
    assert split.train and split.val
    assert sorted(map(id, split.train + split.val)) == sorted(map(id, seeds))
    train_groups = {groups[n] for n in train_notes}
    assert not train_groups & {groups[n] for n in val_notes}
    for note in notes:  # a clean note n + 1 stays with error note n
        number = int(note.text_id.rsplit("-", 1)[1])
        if not note.error_flag:
            assert groups[note.text_id] == groups[f"ms-p-{number - 1}"]


def test_validation_split_is_grouped_stratified_and_near_the_ratio(validation_result):
    notes = validation_result.notes
    seeds = build_seeds(notes, 0, include_clean_notes=True)
    groups = case_groups(notes)
    split = split_seeds(seeds, groups, 0.1, 0)
    val_groups = {groups[s.note_id] for s in split.val}
    assert abs(len(val_groups) - 0.1 * len(set(groups.values()))) <= 1
    members: dict[str, list] = {}
    for seed in seeds:
        members.setdefault(groups[seed.note_id], []).append(seed)
    strata = Counter(stratum_of(group) for group in members.values())
    val_strata = Counter(stratum_of(members[g]) for g in val_groups)
    for stratum, count in strata.items():
        assert abs(val_strata[stratum] - 0.1 * count) < 1 + 1e-9, stratum
    for note in notes:  # MEDEC's clean note n + 1 shares the split of error note n
        if not note.error_flag:
            assert groups[note.text_id] == groups[f"ms-val-{int(note.text_id.rsplit('-', 1)[1]) - 1}"]


def test_ratio_must_be_inside_zero_and_one(validation_result):
    seeds = build_seeds(validation_result.notes, 0)
    with pytest.raises(UserInputError, match="between 0 and 1"):
        split_seeds(seeds, case_groups(validation_result.notes), 1.0, 0)
