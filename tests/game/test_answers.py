"""The assessor answer parser and the error-sentence match."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from medical_team.common.vocab import ERROR_TYPES, Label
from medical_team.game.answers import parse_assessor_answer, sentence_matches


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ("verdict: ERROR", Label.ERROR),
        ("verdict: NO_ERROR", Label.NO_ERROR),
        ("Verdict : no error", Label.NO_ERROR),
        ("VERDICT:No-Error.", Label.NO_ERROR),
        ("**Verdict:** **ERROR**", Label.ERROR),
        ("- verdict: error (the dose is wrong)", Label.ERROR),
        ('verdict = "NO_ERROR"', Label.NO_ERROR),
        ("  verdict:   NOERROR  ", Label.NO_ERROR),
        ("The note looks fine.", None),
        ("", None),
        ("verdict: maybe", None),
        ("verdict: ERRORS everywhere", None),
        ("verdict: ERROR\nverdict: NO_ERROR", None),
        ("verdict: ERROR\nVerdict: error", Label.ERROR),
    ],
)
def test_verdict(answer: str, verdict: Label | None) -> None:
    parsed = parse_assessor_answer(answer)
    assert parsed.verdict is verdict
    assert parsed.readable is (verdict is not None)


def test_all_fields_tolerant_of_case_spacing_and_quotes() -> None:
    parsed = parse_assessor_answer(
        "Verdict: ERROR\n"
        'SENTENCE: "The patient was started on\n  amoxicillin for viral pharyngitis."\n'
        "Error Type: Pharmacotherapy\n"
        "correction :  Supportive care only.  "
    )
    assert parsed.sentence == "The patient was started on amoxicillin for viral pharyngitis."
    assert parsed.error_type == "pharmacotherapy" and parsed.error_type_text == "Pharmacotherapy"
    assert parsed.correction == "Supportive care only."


@pytest.mark.parametrize("spelling", ["causal organism", "CausalOrganism", "causal_organism", "Causal-Organism."])
def test_error_type_spellings(spelling: str) -> None:
    assert parse_assessor_answer(f"verdict: ERROR\nerror_type: {spelling}").error_type == "causalOrganism"


def test_unknown_error_type_keeps_the_text() -> None:
    parsed = parse_assessor_answer("verdict: ERROR\nerror_type: dosage")
    assert parsed.error_type is None and parsed.error_type_text == "dosage"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_never_raises(answer: str) -> None:
    parsed = parse_assessor_answer(answer)
    assert parsed.error_type is None or parsed.error_type in ERROR_TYPES


@pytest.mark.parametrize(
    ("quoted", "known", "match"),
    [
        ("He has pericarditis.", "He has pericarditis.", True),
        ('"he  HAS pericarditis"', "He has pericarditis.", True),
        ("The patient is diagnosed with pericarditis", "The patient is diagnosed with pericarditis today.", True),
        ("pericarditis", "The patient is diagnosed with pericarditis.", False),
        ("He has myocarditis.", "He has pericarditis.", False),
        (None, "He has pericarditis.", False),
        ("He has pericarditis.", None, False),
        ("...", "...", False),
    ],
)
def test_sentence_matches(quoted: str | None, known: str | None, match: bool) -> None:
    assert sentence_matches(quoted, known) is match
