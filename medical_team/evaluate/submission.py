"""The MEDIQA-CORR 2024 run file: `<text_id> <flag> <sentence_id> <correction>`, one note a line.

The shared task's scorer reads it line by line and skips any line its regex (`RUN_LINE`) rejects.
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


@dataclass(frozen=True)
class SubmissionSummary:
    """What went into a run file: lines, unreadable answers written as no error, ids the scorer would skip."""

    lines: int
    unreadable_as_no_error: int
    invalid_text_ids: tuple[str, ...]


def one_line(text: str | None) -> str:
    """A correction on one line (whitespace, newlines included, collapsed); `NA` when there is none."""
    collapsed = " ".join((text or "").split())
    return collapsed or NO_CORRECTION


def run_line(prediction: NotePrediction) -> str:
    """The run-file line of one prediction; no readable verdict is written as the task's no-error line."""
    if prediction.flag != 1:
        return f"{prediction.text_id} 0 -1 {NO_CORRECTION}"
    # A quote that matches no sentence of the note has no id: -1, the task's "no sentence".
    sentence_id = -1 if prediction.sentence_id is None else prediction.sentence_id
    return f"{prediction.text_id} 1 {sentence_id} {one_line(prediction.correction)}"


def write_submission(predictions: Sequence[NotePrediction], path: Path) -> SubmissionSummary:
    """Write one line per prediction, in benchmark order, to `path`; return what was written."""
    lines = [run_line(p) for p in predictions]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return SubmissionSummary(
        lines=len(lines),
        unreadable_as_no_error=sum(p.flag is None for p in predictions),
        invalid_text_ids=tuple(p.text_id for p in predictions if not TEXT_ID.fullmatch(p.text_id)),
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
    return note
