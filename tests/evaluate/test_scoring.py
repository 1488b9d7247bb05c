"""MEDIQA-CORR scores on small hand-made benchmarks."""

import pytest

from medical_team.evaluate.gold import GoldNote
from medical_team.evaluate.predictions import NotePrediction
from medical_team.evaluate.scoring import CorrectionScorer, position_stats, score_predictions

SENTENCES = ("Patient has fever.", "Cultures grow E. coli.", "He is given vancomycin.")


def error_note(text_id: str, error_type: str = "pharmacotherapy", sentence_id: int = 2) -> GoldNote:
    return GoldNote(
        text_id=text_id,
        error_flag=True,
        error_type=error_type,
        error_sentence_id=sentence_id,
        error_sentence=SENTENCES[sentence_id],
        corrected_sentence="He is given ceftriaxone.",
        sentences=SENTENCES,
    )


def clean_note(text_id: str) -> GoldNote:
    return GoldNote(text_id, False, None, -1, None, None, SENTENCES)


GOLDS = [error_note("e1"), error_note("e2", "diagnosis", 1), clean_note("c1"), clean_note("c2")]


def test_perfect_predictions_score_one_everywhere():
    predictions = [
        NotePrediction("e1", 1, 2, "He is given ceftriaxone."),
        NotePrediction("e2", 1, 1, "He is given ceftriaxone."),
        NotePrediction("c1", 0, -1, None),
        NotePrediction("c2", 0, -1, None),
    ]
    scores = score_predictions(GOLDS, predictions)
    assert scores["error_flag_accuracy"] == 1.0
    assert scores["error_sentence_accuracy"] == 1.0
    assert scores["correction_rouge1_f1"] == pytest.approx(1.0)
    assert scores["confusion"] == {"tp": 2, "fn": 0, "fp": 0, "tn": 2, "unreadable": 0, "missing": 0}
    assert scores["format_violation_rate"] == 0.0


def test_official_rules_for_wrong_sentence_false_alarm_unreadable_and_missing():
    predictions = [
        NotePrediction("e1", 1, 0, "He is given ceftriaxone IV."),  # right flag, wrong sentence
        NotePrediction("c1", 1, 1, "Cultures grow S. aureus."),  # false alarm
        NotePrediction("c2", None, None, None, format_violations=("unreadable_verdict",)),
    ]  # e2 has no prediction at all
    scores = score_predictions(GOLDS, predictions)
    assert scores["error_flag_accuracy"] == 0.25
    assert scores["error_sentence_accuracy"] == 0.0
    rouge = CorrectionScorer().rouge1("He is given ceftriaxone IV.", "He is given ceftriaxone.")
    assert 0 < rouge < 1
    # e1 scores its ROUGE-1; the false alarm, the unreadable answer and the missing note score 0.
    assert scores["correction_rouge1_f1"] == pytest.approx(rouge / 4)
    assert scores["correction_rouge1_f1_where_both_corrected"] == pytest.approx(rouge)
    assert scores["missing_predictions"] == 1
    assert scores["format_violation_rate"] == pytest.approx(1 / 3)
    assert scores["format_violations_by_rule"] == {"unreadable_verdict": 1}
    assert scores["confusion"] == {"tp": 1, "fn": 0, "fp": 1, "tn": 0, "unreadable": 1, "missing": 1}


def test_clean_note_predicted_clean_scores_one_for_correction():
    scores = score_predictions([clean_note("c1")], [NotePrediction("c1", 0, -1, None)])
    assert scores["correction_rouge1_f1"] == 1.0


def test_error_predicted_without_correction_scores_zero_for_correction():
    scores = score_predictions([error_note("e1")], [NotePrediction("e1", 1, 2, None)])
    assert scores["error_sentence_accuracy"] == 1.0
    assert scores["correction_rouge1_f1"] == 0.0


def test_per_error_type_groups_only_notes_of_that_type():
    predictions = [NotePrediction("e1", 1, 2, "x"), NotePrediction("e2", 0, -1, None)]
    per_type = score_predictions(GOLDS, predictions)["per_error_type"]
    assert set(per_type) == {"pharmacotherapy", "diagnosis"}
    assert per_type["pharmacotherapy"]["error_flag_accuracy"] == 1.0
    assert per_type["diagnosis"] == {
        "notes": 1,
        "error_flag_accuracy": 0.0,
        "error_sentence_accuracy": 0.0,
        "correction_rouge1_f1": 0.0,
    }


def test_position_statistics():
    stats = position_stats([(4, 5), (0, 5), (2, 5), (0, 1)])
    assert stats["count"] == 4
    assert stats["last_sentence_rate"] == 0.5  # (4 of 5) and the single sentence of a 1-sentence note
    assert stats["first_sentence_rate"] == 0.5
    assert stats["mean_relative_position"] == pytest.approx((1 + 0 + 0.5 + 1) / 4)
    assert stats["relative_position_histogram"] == [1, 0, 1, 0, 2]


def test_unresolved_quotes_are_counted_in_position_stats():
    predictions = [
        NotePrediction("e1", 1, None, "x", quoted_sentence="not in the note"),
        NotePrediction("e2", 1, 2, "x"),
    ]
    positions = score_predictions(GOLDS, predictions)["positions"]
    assert positions["predicted"]["count"] == 1
    assert positions["predicted"]["unresolved_sentences"] == 1
    assert positions["predicted"]["last_sentence_rate"] == 1.0
    assert positions["reference"]["count"] == 2
