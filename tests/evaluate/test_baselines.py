"""The trivial baselines on the real MEDEC-MS test file equal the published figures."""

from importlib.resources import files

import pytest

from medical_team.data.medec import load_medec
from medical_team.evaluate.baselines import baseline_scores
from medical_team.evaluate.gold import GoldNote

TEST_CSV = files("medical_team.data.resources") / "MEDEC-MS-TestSet-with-GroundTruth-and-ErrorType.csv"


@pytest.fixture(scope="module")
def golds() -> list[GoldNote]:
    return [GoldNote.from_note(note) for note in load_medec(str(TEST_CSV)).notes]


def test_test_file_has_597_notes(golds):
    assert len(golds) == 597
    assert sum(g.error_flag for g in golds) == 311


def test_baselines_match_published_figures(golds):
    scores = baseline_scores(golds)
    assert round(scores["always_correct"]["error_flag_accuracy"], 3) == 0.479
    assert round(scores["always_correct"]["error_sentence_accuracy"], 3) == 0.479
    assert round(scores["always_error_last_sentence"]["error_flag_accuracy"], 3) == 0.521
    assert round(scores["always_error_last_sentence"]["error_sentence_accuracy"], 3) == 0.387
