"""Chain-of-thought format parser: splits a response into reasoning and answer and names every rule it breaks.

The response text is what the model wrote after the prompt's open `<think> ` block, so it begins
with the reasoning. Tags are matched literally (case-sensitive), as GAME.md writes them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from enum import Enum

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
ANSWER_OPEN = "<answer>"
ANSWER_CLOSE = "</answer>"

# Required order of the three structural tags; THINK_OPEN must not occur at all.
_ORDERED_TAGS = (THINK_CLOSE, ANSWER_OPEN, ANSWER_CLOSE)


class FormatRule(str, Enum):
    """One violation rule of GAME.md's chain-of-thought format."""

    NO_THINK_CLOSE = "no_think_close"  # `</think>` is missing
    NO_ANSWER_SPAN = "no_answer_span"  # no `<answer>` followed later by `</answer>`
    THINK_REOPENED = "think_reopened"  # the literal `<think>` appears in the response
    EMPTY_REASONING = "empty_reasoning"  # only whitespace before the first `</think>`
    EMPTY_ANSWER = "empty_answer"  # only whitespace inside the answer span
    REPEATED_TAG = "repeated_tag"  # `</think>`, `<answer>` or `</answer>` occurs more than once
    TAGS_OUT_OF_ORDER = "tags_out_of_order"  # some tag occurrence precedes one that must come before it
    THINK_CLOSE_AT_START = "think_close_at_start"  # the response starts with `</think>`
    TEXT_BEFORE_ANSWER = "text_before_answer"  # non-whitespace between `</think>` and `<answer>`
    TEXT_AFTER_ANSWER = "text_after_answer"  # non-whitespace after the last `</answer>`


@dataclass(frozen=True)
class ParsedResponse:
    """A response split by the chain-of-thought format, with the rules it violates."""

    text: str  # the raw response
    reasoning: str  # text before the first `</think>` (stripped); "" when there is none
    answer: str  # the answer span (stripped) if one exists, else the whole stripped text
    has_answer_span: bool
    violations: tuple[FormatRule, ...]  # in FormatRule declaration order, no duplicates

    @property
    def compliant(self) -> bool:
        """True when the response breaks no format rule."""
        return not self.violations


def _occurrences(text: str, tag: str) -> list[int]:
    """Start positions of every (non-overlapping) occurrence of `tag` in `text`."""
    positions, start = [], text.find(tag)
    while start != -1:
        positions.append(start)
        start = text.find(tag, start + len(tag))
    return positions


def _out_of_order(positions: dict[str, list[int]]) -> bool:
    """True when, read left to right, the tags do not follow `</think>` -> `<answer>` -> `</answer>`."""
    ranked = sorted((pos, rank) for rank, tag in enumerate(_ORDERED_TAGS) for pos in positions[tag])
    ranks = [rank for _, rank in ranked]
    return any(a > b for a, b in itertools.pairwise(ranks))


def _answer_span(text: str, opens: list[int]) -> tuple[int, int] | None:
    """(start, end) of the text inside the first `<answer>` and the first `</answer>` after it."""
    if not opens:
        return None
    start = opens[0] + len(ANSWER_OPEN)
    end = text.find(ANSWER_CLOSE, start)
    return (start, end) if end != -1 else None


def parse_response(text: str) -> ParsedResponse:
    """Parse one response; never raises, whatever the text."""
    positions = {tag: _occurrences(text, tag) for tag in _ORDERED_TAGS}
    closes, opens, ends = positions[THINK_CLOSE], positions[ANSWER_OPEN], positions[ANSWER_CLOSE]
    span = _answer_span(text, opens)
    found: set[FormatRule] = set()

    if not closes:
        found.add(FormatRule.NO_THINK_CLOSE)
    if span is None:
        found.add(FormatRule.NO_ANSWER_SPAN)
    if THINK_OPEN in text:
        found.add(FormatRule.THINK_REOPENED)
    reasoning = text[: closes[0]].strip() if closes else ""
    if closes and not reasoning:
        found.add(FormatRule.EMPTY_REASONING)
    if span is not None and not text[span[0] : span[1]].strip():
        found.add(FormatRule.EMPTY_ANSWER)
    if any(len(p) > 1 for p in positions.values()):
        found.add(FormatRule.REPEATED_TAG)
    if _out_of_order(positions):
        found.add(FormatRule.TAGS_OUT_OF_ORDER)
    if text.startswith(THINK_CLOSE):
        found.add(FormatRule.THINK_CLOSE_AT_START)
    if closes and opens and closes[0] < opens[0] and text[closes[0] + len(THINK_CLOSE) : opens[0]].strip():
        found.add(FormatRule.TEXT_BEFORE_ANSWER)
    if ends and text[ends[-1] + len(ANSWER_CLOSE) :].strip():
        found.add(FormatRule.TEXT_AFTER_ANSWER)

    answer = text[span[0] : span[1]].strip() if span is not None else text.strip()
    return ParsedResponse(
        text=text,
        reasoning=reasoning,
        answer=answer,
        has_answer_span=span is not None,
        violations=tuple(rule for rule in FormatRule if rule in found),
    )
