"""MEDIQA-CORR 2024 scores of assessor predictions against the benchmark's ground truth.

Definitions follow the shared task's evaluation script: error-flag and error-sentence accuracy
over all notes (a missing prediction is wrong; sentence id -1 on a clean note is right), and the
composite correction score: per note, ROUGE-1 F1 when both the reference and the prediction
carry a correction, 1 when neither does, 0 when only one does, averaged over all notes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from statistics import fmean
from typing import Any

from medical_team.common.vocab import ERROR_TYPES
from medical_team.evaluate.gold import GoldNote
from medical_team.evaluate.predictions import NotePrediction

# Relative-position histogram: sentence id / (sentences - 1) falls in one of these bins.
POSITION_BINS = 5


def flag_correct(prediction: NotePrediction | None, gold: GoldNote) -> bool:
    """The predicted error flag equals the reference flag."""
    return prediction is not None and prediction.flag == int(gold.error_flag)


def sentence_correct(prediction: NotePrediction | None, gold: GoldNote) -> bool:
    """The predicted sentence id equals the reference id (-1 for clean notes)."""
    return prediction is not None and prediction.sentence_id == gold.error_sentence_id


class CorrectionScorer:
    """ROUGE-1 F1 of predicted corrections, with the shared task's rules for notes without one."""

    def __init__(self) -> None:
        from rouge_score import rouge_scorer

        self._rouge = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=False)

    def rouge1(self, prediction: str, reference: str) -> float:
        """ROUGE-1 F1 of two sentences."""
        return self._rouge.score(reference, prediction)["rouge1"].fmeasure

    def score(self, prediction: NotePrediction | None, gold: GoldNote) -> float:
        """The note's composite correction score in [0, 1]; an unreadable or missing answer scores 0."""
        if prediction is None or prediction.flag is None:
            return 0.0
        candidate = (prediction.correction or "").strip() if prediction.flag == 1 else ""
        reference = (gold.corrected_sentence or "").strip()
        if not candidate and not reference:
            return 1.0
        if not candidate or not reference:
            return 0.0
        return self.rouge1(candidate, reference)


def _rate(hits: Iterable[bool]) -> float | None:
    """Share of True values, or None for an empty sequence."""
    values = list(hits)
    return sum(values) / len(values) if values else None


def position_stats(positions: Sequence[tuple[int, int]]) -> dict[str, Any]:
    """Where in their notes a set of sentences sit; each item is (sentence id, sentences in the note)."""
    relative = [sid / (n - 1) if n > 1 else 1.0 for sid, n in positions]
    histogram = [0] * POSITION_BINS
    for value in relative:
        histogram[min(int(value * POSITION_BINS), POSITION_BINS - 1)] += 1
    return {
        "count": len(positions),
        "last_sentence_rate": _rate(sid == n - 1 for sid, n in positions),
        "first_sentence_rate": _rate(sid == 0 for sid, _ in positions),
        "mean_relative_position": fmean(relative) if relative else None,
        "relative_position_histogram": histogram,
    }


def _group_scores(pairs: list[tuple[NotePrediction | None, GoldNote]], scorer: CorrectionScorer) -> dict[str, Any]:
    """Flag accuracy, sentence accuracy and correction score of a group of notes."""
    return {
        "notes": len(pairs),
        "error_flag_accuracy": _rate(flag_correct(p, g) for p, g in pairs),
        "error_sentence_accuracy": _rate(sentence_correct(p, g) for p, g in pairs),
        "correction_rouge1_f1": fmean(scorer.score(p, g) for p, g in pairs) if pairs else None,
    }


def _confusion(pairs: list[tuple[NotePrediction | None, GoldNote]]) -> dict[str, int]:
    """Counts of true/false positives/negatives, unreadable verdicts and notes without a prediction."""
    counts: Counter[str] = Counter()
    for prediction, gold in pairs:
        if prediction is None:
            counts["missing"] += 1
        elif prediction.flag is None:
            counts["unreadable"] += 1
        else:
            flag = prediction.flag
            counts[("tp" if flag else "fn") if gold.error_flag else ("fp" if flag else "tn")] += 1
    return {key: counts[key] for key in ("tp", "fn", "fp", "tn", "unreadable", "missing")}


def _positions(pairs: list[tuple[NotePrediction | None, GoldNote]]) -> dict[str, Any]:
    """Position statistics of the predicted and of the reference error sentences."""
    flagged = [(p, g) for p, g in pairs if p is not None and p.flag == 1]
    resolved = [(p.sentence_id, len(g.sentences)) for p, g in flagged if p.sentence_id is not None]
    predicted = position_stats(resolved)
    predicted["unresolved_sentences"] = len(flagged) - len(resolved)
    reference = position_stats([(g.error_sentence_id, len(g.sentences)) for _, g in pairs if g.error_flag])
    return {"predicted": predicted, "reference": reference}


def score_predictions(golds: Sequence[GoldNote], predictions: Iterable[NotePrediction]) -> dict[str, Any]:
    """All benchmark scores of `predictions` against `golds` (predictions are matched by text id)."""
    by_id = {p.text_id: p for p in predictions}
    pairs = [(by_id.get(g.text_id), g) for g in golds]
    scorer = CorrectionScorer()
    overall = _group_scores(pairs, scorer)
    answered = [p for p, _ in pairs if p is not None]
    both_corrected = [
        scorer.rouge1(p.correction, g.corrected_sentence)
        for p, g in pairs
        if p is not None and p.flag == 1 and p.correction and g.corrected_sentence
    ]
    typed = [(p, g) for p, g in pairs if g.error_flag and p is not None and p.flag == 1]
    violations = Counter(rule for p in answered for rule in p.format_violations)
    return {
        "notes": len(golds),
        "error_notes": sum(g.error_flag for g in golds),
        "clean_notes": sum(not g.error_flag for g in golds),
        "missing_predictions": len(golds) - len(answered),
        "error_flag_accuracy": overall["error_flag_accuracy"],
        "error_sentence_accuracy": overall["error_sentence_accuracy"],
        "correction_rouge1_f1": overall["correction_rouge1_f1"],
        "correction_rouge1_f1_where_both_corrected": fmean(both_corrected) if both_corrected else None,
        "corrections_compared": len(both_corrected),
        "error_type_accuracy_when_flagged": _rate(p.error_type == g.error_type for p, g in typed),
        "format_violation_rate": _rate(p.format_violation for p in answered),
        "format_violations_by_rule": dict(sorted(violations.items())),
        "confusion": _confusion(pairs),
        "per_error_type": {
            error_type: _group_scores([(p, g) for p, g in pairs if g.error_type == error_type], scorer)
            for error_type in ERROR_TYPES
            if any(g.error_type == error_type for g in golds)
        },
        "clean": _group_scores([(p, g) for p, g in pairs if not g.error_flag], scorer),
        "positions": _positions(pairs),
    }
