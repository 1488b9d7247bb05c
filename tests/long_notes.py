"""A valid MEDEC CSV holding one over-long error note among short ones, for the tests of long inputs."""

from __future__ import annotations

import csv
from pathlib import Path

from data.medec_rows import HEADER

LONG_NOTE_ID = "ms-long-7"
LONG_NOTE_CHARS = 48_240  # the length of the note `medplay convert` once accepted without a word
_FILLER = "He reports intermittent chest pain radiating to the left arm on exertion."


def error_note(note_id: str, filler_sentences: int) -> list[str]:
    """A valid error note: a first sentence, `filler_sentences` of history, then the erroneous sentence."""
    sentences = ["A 60-year-old man has chest pain.", *([_FILLER] * filler_sentences), "He is given ibuprofen."]
    corrected = [*sentences[:-1], "He is given aspirin."]
    numbered = "\n".join(f"{i} {sentence}" for i, sentence in enumerate(sentences))
    return [
        note_id,
        " ".join(sentences),
        numbered,
        "1",
        "pharmacotherapy",
        str(len(sentences) - 1),
        sentences[-1],
        corrected[-1],
        " ".join(corrected),
    ]


def write_long_note_csv(path: Path, short_notes: int = 12) -> Path:
    """`short_notes` short error notes and, as the 8th data row, one note of about LONG_NOTE_CHARS characters."""
    rows = [error_note(f"ms-long-{i}", 2) for i in range(short_notes)]
    fillers = (LONG_NOTE_CHARS - len(" ".join(error_note("x", 0)[1]))) // (len(_FILLER) + 1)
    rows[7] = error_note(LONG_NOTE_ID, fillers)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerows(rows)
    return path
