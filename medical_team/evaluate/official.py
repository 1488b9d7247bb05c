"""The MEDIQA-CORR 2024 scorer's figures, computed as its published script computes them from the two files.

The script (abachaa/MEDIQA-CORR-2024, `evaluation/mediqa-corr-2024-eval-script-*.py`) reads the reference
CSV with pandas and compares text ids, flags and sentence ids as the strings `str()` makes of its cells. It
strips each run line, skips it unless `RUN_LINE` matches, uses it as the replacement template of `re.sub`
(its arguments are swapped), splits it on whitespace, drops quotes around the correction and reads flag 0
as correction `NA`. Corrections are scored with the `rouge` package 1.0.1 (pinned): per reference note, the
ROUGE F of the correction where both sides give one, 1 where both say `NA`, 0 otherwise, summed and divided
by the reference's notes; the "subset check" is the mean where both give one. `reference.csv` holds the
columns it reads for exactly the notes medplay scored, so both sides count the same notes.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medical_team.evaluate.gold import GoldNote
from medical_team.evaluate.predictions import NotePrediction
from medical_team.evaluate.submission import NO_CORRECTION, RUN_LINE, submission_text

REFERENCE_CSV = "reference.csv"
TEXT_ID, ERROR_FLAG, SENTENCE_ID, CORRECTED = "Text ID", "Error Flag", "Error Sentence ID", "Corrected Sentence"
REFERENCE_COLUMNS = (TEXT_ID, ERROR_FLAG, SENTENCE_ID, CORRECTED)
SCORER = "MEDIQA-CORR 2024 evaluation script (rouge 1.0.1) on submission.txt and reference.csv"
# The script's ROUGE variants and the names it prints them under.
_ROUGE_NAMES = {"rouge-1": "R1F", "rouge-2": "R2F", "rouge-l": "RLF"}
_WHITESPACE = re.compile(r"\s+")


@dataclass
class ReadFile:
    """One side as the script holds it: text id -> flag, sentence id and correction, all strings."""

    flags: dict[Any, str] = field(default_factory=dict)
    sentence_ids: dict[Any, str] = field(default_factory=dict)
    corrections: dict[Any, str] = field(default_factory=dict)
    invalid_lines: int = 0


def reference_text(golds: Sequence[GoldNote]) -> str:
    """reference.csv: the script's four columns for each note, with the strings it compares (`1`, `-1`, `NA`)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(REFERENCE_COLUMNS)
    for gold in golds:
        correction = gold.corrected_sentence if gold.error_flag and gold.corrected_sentence else NO_CORRECTION
        writer.writerow((gold.text_id, int(gold.error_flag), gold.error_sentence_id, correction))
    return buffer.getvalue()


def read_reference(text: str) -> ReadFile:
    """The reference as the script reads it: pandas' cells through `str()`, a missing correction as `NA`."""
    import pandas as pd

    read = ReadFile()
    for _, row in pd.read_csv(io.StringIO(text)).iterrows():
        text_id, correction = row[TEXT_ID], row[CORRECTED]
        if not isinstance(correction, str):
            # The script cleans only non-string cells; a string correction is kept exactly as read.
            if math.isnan(correction):
                correction = NO_CORRECTION
            else:
                correction = str(correction).replace("\n", " ").replace("\r", " ").strip()
        read.corrections[text_id] = correction
        read.flags[text_id] = str(row[ERROR_FLAG])
        read.sentence_ids[text_id] = str(row[SENTENCE_ID])
    return read


def _unquoted(correction: str) -> str:
    """The correction without the double quotes the script strips from both ends (one character stays)."""
    while correction.startswith('"') and len(correction) > 1:
        correction = correction[1:]
    while correction.endswith('"') and len(correction) > 1:
        correction = correction[:-1]
    return correction


def read_run(text: str) -> ReadFile:
    """The run file as the script reads it, line template expansion included; later lines of an id win."""
    read = ReadFile()
    for raw in io.StringIO(text, newline=None).readlines():
        line = raw.strip()
        if not line:
            continue
        if not RUN_LINE.fullmatch(line):
            read.invalid_lines += 1
            continue
        # The script's `re.sub('\s+', line, ' ')`: the single space is replaced by the line read as a template.
        items = _WHITESPACE.match(" ").expand(line).split()
        text_id, flag, sentence_id = items[:3]
        read.flags[text_id] = flag
        read.sentence_ids[text_id] = sentence_id
        correction = _unquoted(" ".join(items[3:]).strip())
        read.corrections[text_id] = NO_CORRECTION if flag == "0" else correction
    return read


def _accuracy(reference: dict[Any, str], run: dict[Any, str]) -> float:
    """Share of reference ids whose run value is the same string (a missing id is wrong)."""
    return sum(text_id in run and run[text_id] == value for text_id, value in reference.items()) / len(reference)


def _pairs(reference: ReadFile, run: ReadFile) -> tuple[list[str], list[str], dict[str, int]]:
    """The (reference, candidate) corrections ROUGE compares, and the script's counters."""
    references: list[str] = []
    candidates: list[str] = []
    counters = dict.fromkeys(
        ("total_texts", "reference_na", "total_system_texts", "system_provided_na", "system_provided_correct_na"), 0
    )
    for text_id, wanted in reference.corrections.items():
        counters["total_texts"] += 1
        counters["reference_na"] += wanted == NO_CORRECTION
        if text_id not in run.corrections:
            continue
        counters["total_system_texts"] += 1
        candidate = run.corrections[text_id]
        counters["system_provided_na"] += candidate == NO_CORRECTION
        if wanted == NO_CORRECTION and candidate == NO_CORRECTION:
            counters["system_provided_correct_na"] += 1
        elif NO_CORRECTION not in (wanted, candidate):
            references.append(wanted)
            candidates.append(candidate)
    return references, candidates, counters


def _mean(values: list[float]) -> float | None:
    """numpy's mean, as the script takes it; None where the script prints nan (no pair compared)."""
    import numpy as np

    return float(np.array(values).mean()) if values else None


def official_scores(run: ReadFile, reference: ReadFile) -> dict[str, Any]:
    """The script's accuracies, ROUGE subset checks and composites, and its counters, under the names it prints."""
    import numpy as np
    from rouge import Rouge

    references, candidates, counters = _pairs(reference, run)
    scores = Rouge().get_scores(candidates, references) if candidates else []
    result: dict[str, Any] = {
        "scorer": SCORER,
        "Error Flags Accuracy": _accuracy(reference.flags, run.flags),
        "Error Sentence Detection Accuracy": _accuracy(reference.sentence_ids, run.sentence_ids),
    }
    for metric, name in _ROUGE_NAMES.items():
        values = [score[metric]["f"] for score in scores]
        result[f"{name}_subset_check"] = _mean(values)
        total = float(np.array(values).sum()) + counters["system_provided_correct_na"]
        result[f"{name}C"] = total / counters["total_texts"]
    result["counters"] = counters
    result["invalid_lines"] = run.invalid_lines
    return result


def official_scores_of(predictions: Sequence[NotePrediction], golds: Sequence[GoldNote]) -> dict[str, Any]:
    """The script's figures on the run file and the reference file medplay writes for these notes."""
    return official_scores(read_run(submission_text(predictions)), read_reference(reference_text(golds)))


def write_reference(golds: Sequence[GoldNote], path: Path) -> None:
    """Write reference.csv for these notes."""
    path.write_text(reference_text(golds), encoding="utf-8")
