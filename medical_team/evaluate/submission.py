"""The MEDIQA-CORR 2024 run file: `<text_id> <flag> <sentence_id> <correction>`, one note a line.

The shared task's scorer reads it line by line and skips any line its regex (`RUN_LINE`) rejects.
Each line is also one the scorer can score without raising, whatever the model wrote (see `scorer_safe`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from medical_team.evaluate.predictions import NotePrediction

SUBMISSION_TXT = "submission.txt"
# The scorer's line pattern (re.fullmatch on the stripped line) and its text-id part.
RUN_LINE = re.compile(r"[a-z0-9\-]+\s[0-9]+\s\-?[0-9]+\s.+")
TEXT_ID = re.compile(r"[a-z0-9\-]+")
NO_CORRECTION = "NA"
# The `rouge` package the scorer uses rebuilds the longest common subsequence recursively, one call per
# word: a run-on correction of ~1000 words raises RecursionError. MEDEC's corrections have at most 44 words.
MAX_CORRECTION_WORDS = 200
# A correction the scorer's `rouge` cannot score ("Hypothesis is empty"): nothing but dots once its quotes go.
_ONLY_DOTS = re.compile(r'"*\.+"*')


@dataclass(frozen=True)
class SubmissionSummary:
    """What went into a run file: lines, unreadable answers written as no error, ids the scorer would skip,
    and corrections rewritten so the scorer can read them."""

    lines: int
    unreadable_as_no_error: int
    invalid_text_ids: tuple[str, ...]
    backslashes_escaped: int = 0
    corrections_shortened: int = 0
    corrections_dropped: int = 0


def one_line(text: str | None) -> str:
    """A correction on one line (whitespace, newlines included, collapsed); `NA` when there is none."""
    collapsed = " ".join((text or "").split())
    return collapsed or NO_CORRECTION


def scorer_safe(correction: str) -> str:
    """A one-line correction as the shared task's scorer can read and score it, meaning kept.

    The scorer passes every run line to `re.sub` as the replacement template (its arguments are swapped),
    so a backslash starts an escape there (`\\1`, `\\m` raise, `\\t` becomes a tab): each one is doubled,
    which the template turns back into one. Past MAX_CORRECTION_WORDS the words are cut; a correction of
    nothing but dots and quotes becomes `NA`.
    """
    words = correction.split()
    if len(words) > MAX_CORRECTION_WORDS:
        correction = " ".join(words[:MAX_CORRECTION_WORDS])
    if _ONLY_DOTS.fullmatch(correction):
        return NO_CORRECTION
    return correction.replace("\\", "\\\\")


def run_line(prediction: NotePrediction) -> str:
    """The run-file line of one prediction; no readable verdict is written as the task's no-error line."""
    if prediction.flag != 1:
        return f"{prediction.text_id} 0 -1 {NO_CORRECTION}"
    # A quote that matches no sentence of the note has no id: -1, the task's "no sentence".
    sentence_id = -1 if prediction.sentence_id is None else prediction.sentence_id
    return f"{prediction.text_id} 1 {sentence_id} {scorer_safe(one_line(prediction.correction))}"


def submission_text(predictions: Sequence[NotePrediction]) -> str:
    """The whole run file: one line per prediction, in the order given."""
    return "".join(run_line(p) + "\n" for p in predictions)


def _corrections(predictions: Sequence[NotePrediction]) -> list[str]:
    """The one-line corrections of the flagged predictions."""
    return [one_line(p.correction) for p in predictions if p.flag == 1]


def write_submission(predictions: Sequence[NotePrediction], path: Path) -> SubmissionSummary:
    """Write one line per prediction, in benchmark order, to `path`; return what was written."""
    path.write_text(submission_text(predictions), encoding="utf-8")
    corrections = _corrections(predictions)
    return SubmissionSummary(
        lines=len(predictions),
        unreadable_as_no_error=sum(p.flag is None for p in predictions),
        invalid_text_ids=tuple(p.text_id for p in predictions if not TEXT_ID.fullmatch(p.text_id)),
        backslashes_escaped=sum("\\" in c for c in corrections),
        corrections_shortened=sum(len(c.split()) > MAX_CORRECTION_WORDS for c in corrections),
        corrections_dropped=sum(c != NO_CORRECTION and scorer_safe(c) == NO_CORRECTION for c in corrections),
    )


def submission_note(summary: SubmissionSummary, path: Path) -> str:
    """One console line about the run file, naming what the shared task's scorer would treat differently."""
    note = f"wrote {path} ({summary.lines} lines, MEDIQA-CORR run format)"
    if summary.unreadable_as_no_error:
        note += f"; {summary.unreadable_as_no_error} answers without a readable verdict written as `0 -1 NA`"
    if summary.invalid_text_ids:
        note += (
            f"; {len(summary.invalid_text_ids)} text ids outside [a-z0-9-] (e.g. {summary.invalid_text_ids[0]!r}): "
            "the shared task's scorer skips those lines"
        )
    rewritten = (
        (summary.backslashes_escaped, "with backslashes doubled (the scorer reads them back single)"),
        (summary.corrections_shortened, f"cut to {MAX_CORRECTION_WORDS} words"),
        (summary.corrections_dropped, "of only dots written as `NA`"),
    )
    for count, what in rewritten:
        if count:
            note += f"; {count} corrections {what}"
    return note
