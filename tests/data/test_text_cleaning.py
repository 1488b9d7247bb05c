"""Sentence parsing and text repairs of MEDEC cells."""

from __future__ import annotations

import pytest

from medical_team.data.text import (
    SentenceParseError,
    blank_to_none,
    normalise_newlines,
    parse_sentences,
    repair_mojibake,
)


def test_numbered_lines_start_sentences_and_others_continue_them():
    cell = "0 Her pulse is\n1 106/min and blood pressure is 102/73 mm\nHg.\n\n2 She is well."
    assert parse_sentences(cell) == ("Her pulse is", "106/min and blood pressure is 102/73 mm Hg.", "She is well.")


def test_a_number_that_is_not_the_next_index_continues_the_sentence():
    assert parse_sentences("0 Dose was\n5 mg daily.\n1 Next.") == ("Dose was 5 mg daily.", "Next.")


def test_crlf_inside_the_cell():
    assert parse_sentences("0 One.\r\n1 Two.\r\n") == ("One.", "Two.")


@pytest.mark.parametrize("cell", ["", "   \n", "1 starts at one", "no number"])
def test_cells_without_sentence_zero_are_rejected(cell):
    with pytest.raises(SentenceParseError):
        parse_sentences(cell)


def test_mojibake_is_repaired_and_nothing_else_changes():
    assert repair_mojibake("dose 5 Î¼g â€“ daily") == "dose 5 μg – daily"
    kept = "He said “stop” & left; ﬁne <5 mg"
    assert repair_mojibake(kept) == kept


def test_newlines_and_missing_values():
    assert normalise_newlines("a\r\nb\rc") == "a\nb\nc"
    assert blank_to_none(" NA ") is None and blank_to_none("") is None and blank_to_none(" x ") == "x"
