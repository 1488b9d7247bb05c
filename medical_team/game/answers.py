"""Assessor answer parser: verdict, erroneous sentence, error type and correction from `key: value` lines."""

from __future__ import annotations

import re
from dataclasses import dataclass

from medical_team.common.vocab import ERROR_TYPES, Label

_FIELDS = ("verdict", "sentence", "error_type", "correction")
# `key: value`, tolerating bullets, markdown emphasis, any case and spaces or hyphens inside the key.
_LINE = re.compile(
    r"^[\s>*\-•]*\**\s*(verdict|sentence|error[\s_\-]*type|correction)\s*\**\s*[:=]\s*(.*)$", re.IGNORECASE
)
# A verdict value starts with ERROR or NO ERROR (any spacing/underscore/hyphen); a trailing remark is allowed.
_VERDICT = re.compile(r"^(NO[\s_\-]*ERROR|ERROR)(?![A-Z0-9_])")
_TYPES = {re.sub(r"[\s_\-]", "", t).lower(): t for t in ERROR_TYPES}
_QUOTES = "\"'`“”‘’*"


@dataclass(frozen=True)
class AssessorAnswer:
    """The fields of an assessor's answer; `verdict` is None when missing or unreadable."""

    verdict: Label | None
    sentence: str | None = None
    error_type: str | None = None  # one of ERROR_TYPES when recognised, else None
    error_type_text: str | None = None  # the raw error_type value as written
    correction: str | None = None

    @property
    def readable(self) -> bool:
        """True when the answer carries exactly one readable verdict."""
        return self.verdict is not None


def _field_name(raw_key: str) -> str:
    """Canonical field name for a matched key (`Error Type` -> `error_type`)."""
    key = raw_key.lower()
    return "error_type" if key.startswith("error") else key


def _unquote(value: str) -> str:
    """A value without surrounding whitespace and quote/emphasis characters."""
    return value.strip(_QUOTES + " \t\r\n")


def _verdict(values: list[str]) -> Label | None:
    """The verdict named by every `verdict:` line, or None if absent, unreadable or contradictory."""
    labels = set()
    for value in values:
        match = _VERDICT.match(_unquote(value).upper())
        labels.add(None if match is None else Label.ERROR if match.group(1) == "ERROR" else Label.NO_ERROR)
    return labels.pop() if len(labels) == 1 else None


def _error_type(value: str | None) -> str | None:
    """The MEDEC error type a value names (case, spaces and underscores ignored), or None."""
    if value is None:
        return None
    return _TYPES.get(re.sub(r"[\s_\-.]", "", _unquote(value)).lower())


def parse_assessor_answer(answer: str) -> AssessorAnswer:
    """Parse the text inside the assessor's `<answer>`; never raises.

    Lines without a known key continue the previous field (a sentence may wrap); a field given
    twice keeps its first value, except `verdict`, where disagreeing lines make it unreadable.
    """
    values: dict[str, list[str]] = {name: [] for name in _FIELDS}
    current: str | None = None
    for line in answer.splitlines():
        match = _LINE.match(line)
        if match:
            current = _field_name(match.group(1))
            values[current].append(match.group(2))
        elif current is not None and current != "verdict" and values[current] and (extra := line.strip()):
            values[current][-1] = f"{values[current][-1]} {extra}"

    def first(name: str) -> str | None:
        for value in values[name]:
            if text := _unquote(value):
                return text
        return None

    error_type_text = first("error_type")
    return AssessorAnswer(
        verdict=_verdict(values["verdict"]),
        sentence=first("sentence"),
        error_type=_error_type(error_type_text),
        error_type_text=error_type_text,
        correction=first("correction"),
    )


def _normalise(sentence: str) -> str:
    """Lower-case words of a sentence with quotes, punctuation at the ends and extra spaces removed."""
    return " ".join(_unquote(sentence).casefold().split()).strip(" .;:,!?")


def sentence_matches(quoted: str | None, known: str | None, min_coverage: float = 0.8) -> bool:
    """True when the assessor's quoted sentence is the known error sentence.

    Equal after normalising case, spaces, quotes and end punctuation; or one contains the other
    and the shorter covers at least `min_coverage` of the longer (a quote may drop a clause).
    """
    if not quoted or not known:
        return False
    a, b = _normalise(quoted), _normalise(known)
    if not a or not b:
        return False
    if a == b:
        return True
    short, long_ = sorted((a, b), key=len)
    return short in long_ and len(short) >= min_coverage * len(long_)
