"""What the game asks of a judge. Judge backends in `medical_team.judge` implement `Judge`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from medical_team.data.records import GameSeed
from medical_team.vocab import Label


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
