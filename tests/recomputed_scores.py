"""medplay's three scores recomputed from predictions, straight from the MEDIQA-CORR rules (rouge_score, not medplay's code)."""

from statistics import fmean

from rouge_score import rouge_scorer


def recompute(predictions: list[dict], notes) -> dict[str, float]:
    """Flag accuracy, sentence accuracy and composite correction score, straight from the MEDIQA-CORR rules."""
    rouge = rouge_scorer.RougeScorer(["rouge1"])
    by_id = {p["text_id"]: p for p in predictions}
    flags, sentences, corrections = [], [], []
    for note in notes:
        p = by_id.get(note.text_id)
        flags.append(p is not None and p["flag"] == int(note.error_flag))
        sentences.append(p is not None and p["sentence_id"] == note.error_sentence_id)
        if p is None or p["flag"] is None:
            corrections.append(0.0)
            continue
        candidate = (p["correction"] or "") if p["flag"] == 1 else ""
        reference = note.corrected_sentence or ""
        if not candidate and not reference:
            corrections.append(1.0)
        elif not candidate or not reference:
            corrections.append(0.0)
        else:
            corrections.append(rouge.score(reference, candidate)["rouge1"].fmeasure)
    return {
        "error_flag_accuracy": fmean(flags),
        "error_sentence_accuracy": fmean(sentences),
        "correction_rouge1_f1": fmean(corrections),
    }
