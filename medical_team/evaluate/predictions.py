"""One assessor prediction per benchmark note, read from the model's raw response."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from medical_team.common.vocab import Label
from medical_team.evaluate.gold import GoldNote
from medical_team.evaluate.sentence_ids import sentence_id_of
from medical_team.game.answers import parse_assessor_answer
from medical_team.game.cot import parse_response

# Format-violation name for an answer without one readable verdict (a violation: docs/game.md, "Assessor answers").
UNREADABLE_VERDICT = "unreadable_verdict"


@dataclass(frozen=True)
class NotePrediction:
    """What the assessor said about one note, in MEDIQA-CORR terms.

    `flag` is 1 (error), 0 (no error) or None (no readable verdict: scored as wrong).
    `sentence_id` is -1 when flag is 0, the matched sentence id when flag is 1, and None when
    flag is 1 but the quoted sentence matches no sentence of the note (scored as wrong).
    """

    text_id: str
    flag: int | None
    sentence_id: int | None
    correction: str | None
    error_type: str | None = None
    quoted_sentence: str | None = None
    format_violations: tuple[str, ...] = ()

    @property
    def format_violation(self) -> bool:
        """True when the response broke the chain-of-thought format or gave no readable verdict."""
        return bool(self.format_violations)

    def as_json(self) -> dict[str, Any]:
        """The prediction as a JSON-able dict (violations as a list)."""
        out = asdict(self)
        out["format_violations"] = list(self.format_violations)
        out["format_violation"] = self.format_violation
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NotePrediction:
        """Rebuild a prediction from `as_json` output."""
        return cls(
            text_id=data["text_id"],
            flag=data["flag"],
            sentence_id=data["sentence_id"],
            correction=data["correction"],
            error_type=data.get("error_type"),
            quoted_sentence=data.get("quoted_sentence"),
            format_violations=tuple(data.get("format_violations", ())),
        )


@dataclass(frozen=True)
class ReadAnswer:
    """An assessor response read without ground truth: `flag` 1, 0 or None (no readable verdict)."""

    flag: int | None
    sentence: str | None  # the quoted sentence, when flag is 1
    correction: str | None  # when flag is 1
    error_type: str | None  # one of ERROR_TYPES, when flag is 1 and it is recognised
    format_violations: tuple[str, ...]


def read_response(response: str) -> ReadAnswer:
    """Parse an assessor response (text after the thinking prefix): verdict, quoted sentence, correction, violations."""
    parsed = parse_response(response)
    answer = parse_assessor_answer(parsed.answer)
    violations = [rule.value for rule in parsed.violations]
    if answer.verdict is None:
        violations.append(UNREADABLE_VERDICT)
    if answer.verdict is Label.ERROR:
        return ReadAnswer(1, answer.sentence, answer.correction, answer.error_type, tuple(violations))
    return ReadAnswer(0 if answer.verdict is Label.NO_ERROR else None, None, None, None, tuple(violations))


def predict_from_response(response: str, gold: GoldNote) -> NotePrediction:
    """Parse an assessor response (text after the thinking prefix) into a prediction for `gold`'s note."""
    answer = read_response(response)
    if answer.flag == 1:
        sentence_id = sentence_id_of(answer.sentence, gold.sentences)
    else:
        sentence_id = -1 if answer.flag == 0 else None
    return NotePrediction(
        text_id=gold.text_id,
        flag=answer.flag,
        sentence_id=sentence_id,
        correction=answer.correction,
        error_type=answer.error_type,
        quoted_sentence=answer.sentence,
        format_violations=answer.format_violations,
    )
