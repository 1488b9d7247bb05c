"""Text repairs for MEDEC cells (mojibake, line endings, `NA`) and the numbered-sentence parser."""

from __future__ import annotations

import re

import ftfy

# Only encoding repairs: quotes, ligatures, widths and HTML entities in clinical text stay as written.
_FTFY_CONFIG = ftfy.TextFixerConfig(
    unescape_html=False,
    remove_terminal_escapes=False,
    fix_latin_ligatures=False,
    fix_character_width=False,
    uncurl_quotes=False,
    fix_line_breaks=False,
    explain=False,
)

# Values that MEDEC uses for "no value" in its text and id columns.
MISSING_VALUES = frozenset({"", "NA"})


def normalise_newlines(text: str) -> str:
    """CRLF and lone CR become LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def repair_mojibake(text: str) -> str:
    """Undo double-encoded UTF-8 (`â€“` -> `–`, `Î¼` -> `μ`) and nothing else."""
    if text.isascii():  # mojibake needs non-ASCII characters; skipping ftfy here saves most of its cost
        return text
    return ftfy.fix_text(text, _FTFY_CONFIG)


def blank_to_none(value: str) -> str | None:
    """The stripped cell, or None when it is empty or MEDEC's `NA`."""
    value = value.strip()
    return None if value in MISSING_VALUES else value


class SentenceParseError(ValueError):
    """The `Sentences` cell does not follow the `<k> <text>` numbering."""


def parse_sentences(cell: str) -> tuple[str, ...]:
    """Split a `Sentences` cell into its sentences: sentence k at index k.

    A line starting with the next expected index and a space begins a sentence; any other
    non-blank line continues the current one (joined with a space); blank lines are skipped.
    """
    sentences: list[str] = []
    for line_number, raw_line in enumerate(normalise_newlines(cell).split("\n"), start=1):
        line = raw_line.strip()
        if not line:
            continue
        match = re.match(rf"{len(sentences)}(?:\s+|$)(.*)", line, flags=re.DOTALL)
        if match:
            sentences.append(match.group(1).strip())
        elif sentences:
            sentences[-1] = f"{sentences[-1]} {line}".strip()
        else:
            raise SentenceParseError(f"line {line_number} should start with sentence number 0, found {line[:40]!r}")
    if not sentences:
        raise SentenceParseError("no numbered sentences (expected lines like '0 <first sentence>')")
    return tuple(sentences)


def same_text(left: str, right: str) -> bool:
    """True when two texts are equal ignoring whitespace differences."""
    return " ".join(left.split()) == " ".join(right.split())
