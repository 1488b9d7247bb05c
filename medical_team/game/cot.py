"""Chain-of-thought format parser: splits a response into reasoning and answer and names every rule it breaks.

The response text is what the model wrote after the prompt's open `<think> ` block, so it begins
with the reasoning. Tags are matched literally (case-sensitive): docs/game.md, "Chain-of-thought format".
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
    """One violation rule of the chain-of-thought format (docs/game.md, "Chain-of-thought format")."""

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


def _out_of_order(text: str, firsts: tuple[int, int, int], repeated: bool) -> bool:
    """True when, read left to right, the tags do not follow `</think>` -> `<answer>` -> `</answer>`."""
    if not repeated:  # common case: each tag occurs at most once, so compare first positions
        present = [pos for pos in firsts if pos != -1]
        return present != sorted(present)
    ranked = sorted((pos, rank) for rank, tag in enumerate(_ORDERED_TAGS) for pos in _occurrences(text, tag))
    return any(a[1] > b[1] for a, b in itertools.pairwise(ranked))


def parse_response(text: str) -> ParsedResponse:
    """Parse one response; never raises, whatever the text."""
    close, opening, first_end = text.find(THINK_CLOSE), text.find(ANSWER_OPEN), text.find(ANSWER_CLOSE)
    span_end = text.find(ANSWER_CLOSE, opening + len(ANSWER_OPEN)) if opening != -1 else -1
    span = text[opening + len(ANSWER_OPEN) : span_end] if span_end != -1 else None
    reasoning = text[:close].strip() if close != -1 else ""
    last_end = text.rfind(ANSWER_CLOSE)
    repeated = (
        text.find(THINK_CLOSE, close + 1) != -1 or text.find(ANSWER_OPEN, opening + 1) != -1 or (first_end != last_end)
    )
    # Checked in FormatRule declaration order, so `violations` comes out in that order.
    broken = []
    if close == -1:
        broken.append(FormatRule.NO_THINK_CLOSE)
    if span is None:
        broken.append(FormatRule.NO_ANSWER_SPAN)
    if THINK_OPEN in text:
        broken.append(FormatRule.THINK_REOPENED)
    if close != -1 and not reasoning:
        broken.append(FormatRule.EMPTY_REASONING)
    if span is not None and not span.strip():
        broken.append(FormatRule.EMPTY_ANSWER)
    if repeated:
        broken.append(FormatRule.REPEATED_TAG)
    if _out_of_order(text, (close, opening, first_end), repeated):
        broken.append(FormatRule.TAGS_OUT_OF_ORDER)
    if close == 0:
        broken.append(FormatRule.THINK_CLOSE_AT_START)
    if -1 < close < opening and text[close + len(THINK_CLOSE) : opening].strip():
        broken.append(FormatRule.TEXT_BEFORE_ANSWER)
    if last_end != -1 and text[last_end + len(ANSWER_CLOSE) :].strip():
        broken.append(FormatRule.TEXT_AFTER_ANSWER)
    return ParsedResponse(
        text=text,
        reasoning=reasoning,
        answer=span.strip() if span is not None else text.strip(),
        has_answer_span=span is not None,
        violations=tuple(broken),
    )
