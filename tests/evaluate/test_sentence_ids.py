"""Mapping quoted sentences to MEDEC sentence ids."""

from hypothesis import given
from hypothesis import strategies as st

from medical_team.evaluate.sentence_ids import sentence_id_of

NOTE = (
    "A 45-year-old man presents with chest pain.",
    "His blood pressure is 150/90 mm Hg.",
    "Aspirin is given.",
    "Diagnosis is stable angina.",
)


def test_exact_quote_maps_to_its_id():
    assert sentence_id_of("Aspirin is given.", NOTE) == 2


def test_case_quotes_spaces_and_end_punctuation_are_ignored():
    assert sentence_id_of('  "diagnosis   IS stable angina" ', NOTE) == 3


def test_quote_missing_a_few_words_maps_to_containing_sentence():
    assert sentence_id_of("A 45-year-old man presents with chest pain", NOTE) == 0
    assert sentence_id_of("His blood pressure is 150/90", NOTE) == 1


def test_small_copy_slip_is_tolerated():
    assert sentence_id_of("His blood presure is 150/90 mm Hg.", NOTE) == 1


def test_unrelated_or_empty_quote_maps_to_none():
    assert sentence_id_of("The patient was discharged home on day 3.", NOTE) is None
    assert sentence_id_of("", NOTE) is None
    assert sentence_id_of(None, NOTE) is None
    assert sentence_id_of("anything", ()) is None


words = st.text(alphabet="abcdefghij ", min_size=12, max_size=60).filter(lambda s: len(s.split()) >= 3)


@given(st.lists(words, min_size=1, max_size=8, unique_by=lambda s: " ".join(s.split())), st.data())
def test_every_sentence_of_a_note_maps_to_its_own_id(sentences, data):
    index = data.draw(st.integers(0, len(sentences) - 1))
    assert sentence_id_of(sentences[index], sentences) is not None
    matched = sentence_id_of(sentences[index], sentences)
    assert " ".join(sentences[matched].split()) == " ".join(sentences[index].split())
