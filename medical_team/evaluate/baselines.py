"""The trivial baselines of the MEDEC benchmark, scored exactly like a model (strict and official figures)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from medical_team.evaluate.gold import GoldNote
from medical_team.evaluate.official import official_scores_of
from medical_team.evaluate.predictions import NotePrediction
from medical_team.evaluate.scoring import score_predictions

# Scores copied from each baseline's full score dict into the summary.
BASELINE_KEYS = ("error_flag_accuracy", "error_sentence_accuracy", "correction_rouge1_f1")


def always_correct(golds: Sequence[GoldNote]) -> list[NotePrediction]:
    """Predict "no error" for every note."""
    return [NotePrediction(text_id=g.text_id, flag=0, sentence_id=-1, correction=None) for g in golds]


def always_error_last_sentence(golds: Sequence[GoldNote]) -> list[NotePrediction]:
    """Predict an error in the last sentence of every note, "correcting" it to itself."""
    return [
        NotePrediction(text_id=g.text_id, flag=1, sentence_id=g.last_sentence_id, correction=g.sentences[-1])
        for g in golds
    ]


BASELINES = {
    "always_correct": always_correct,
    "always_error_last_sentence": always_error_last_sentence,
}


def baseline_scores(golds: Sequence[GoldNote]) -> dict[str, dict[str, Any]]:
    """Each trivial baseline's strict flag, sentence and correction scores, and the official script's block."""
    results = {}
    for name, predict in BASELINES.items():
        predictions = predict(golds)
        scores = score_predictions(golds, predictions)
        results[name] = {key: scores[key] for key in BASELINE_KEYS}
        results[name]["official"] = official_scores_of(predictions, golds)
    return results
