"""What the game asks of a judge, and what a rewrite may not say to it. Judge backends in `medical_team.judge`
implement `Judge`; the model judge's prompt and parser (`judge/prompt.py`) take the names below from here."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from medical_team.common.vocab import Label
from medical_team.data.records import GameSeed

JUDGE_ANSWER_KEYS = ("error_present", "faithful", "error_sentence")  # the model judge's answer lines, in order
JUDGE_PROMPT_HEADINGS = ("ORIGINAL NOTE", "WHAT IS KNOWN", "REWRITTEN NOTE")  # the sections of its user message
REWRITE_FENCE = "<<<"  # opens the lines that fence the rewrite in the judge's prompt

# `key:` at a line's start, markdown emphasis and backticks tolerated: what the judge's parser reads as an answer.
JUDGE_ANSWER_LINE = re.compile(
    rf"^[ \t*`_]*({'|'.join(JUDGE_ANSWER_KEYS)})[ \t*`_]*:[ \t*`_]*(.*?)[ \t*`_]*$", re.IGNORECASE | re.MULTILINE
)
_HEADING_LINE = re.compile(
    rf"^[ \t*#`_]*({'|'.join(JUDGE_PROMPT_HEADINGS)})[ \t*`_]*(:|\(|$)", re.IGNORECASE | re.MULTILINE
)


def judge_injection(rewrite: str) -> str | None:
    """The first line of a rewrite that speaks the judge's language (an answer line, a prompt heading, the
    rewrite's fence), or None. A note has no reason to carry one: it is an attempt to settle its own game."""
    found = [m for pattern in (JUDGE_ANSWER_LINE, _HEADING_LINE) if (m := pattern.search(rewrite))]
    fence = rewrite.find(REWRITE_FENCE)
    starts = [m.start() for m in found] + ([fence] if fence >= 0 else [])
    if not starts:
        return None
    start = min(starts)
    line_start = rewrite.rfind("\n", 0, start) + 1
    line_end = rewrite.find("\n", start)
    return rewrite[line_start : None if line_end < 0 else line_end].strip()


@dataclass(frozen=True)
class JudgeRequest:
    """One adversarial game to settle: the seed, what the attacker was asked to realise, and its rewrite."""

    seed: GameSeed
    intended_label: Label  # the label the attacker's rewrite should have (its category, docs/game.md)
    rewrite: str  # the attacker's parsed answer: the note the assessor sees


@dataclass(frozen=True)
class JudgeVerdict:
    """The judge's answer for one game; `tie` when it could not decide (parse failure, outage)."""

    error_present: bool | None
    faithful: bool | None
    error_sentence: str | None = None
    tie: bool = False
    reason: str = ""  # which rule or backend decided, or why it is a tie
    parse_error: bool = False  # the model's output could not be parsed (counted in judge/parse_error_rate)

    @classmethod
    def as_tie(cls, reason: str, *, parse_error: bool = False) -> JudgeVerdict:
        """A verdict that makes the game a tie."""
        return cls(error_present=None, faithful=None, tie=True, reason=reason, parse_error=parse_error)


class Judge(Protocol):
    """Settles the truth of rewritten notes, a batch at a time, in request order."""

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """One verdict per request, in order; never raises for a bad model output (that is a tie)."""
        ...
