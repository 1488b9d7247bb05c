"""Sentence numbering of plain notes: sentence k at index k, as MEDEC's `Sentences` column gives it (docs/data.md).

The splitter is sentencex (rule-based, with English abbreviation lists; nothing to download at run time), pinned to
one version because a note's sentence ids depend on its rules.
"""

from __future__ import annotations

from sentencex import segment

LANGUAGE = "en"


def split_sentences(text: str) -> tuple[str, ...]:
    """The note's sentences in order, each with its blanks and line breaks collapsed to single spaces.

    Nothing is dropped but blanks: the sentences hold every other character of the note, in order (a boundary
    may fall where the note has no space, as in `mm3.The`).
    """
    parts = (" ".join(part.split()) for part in segment(LANGUAGE, text))
    return tuple(part for part in parts if part)
