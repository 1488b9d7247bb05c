"""Plain-notes CSVs for tests: real clinical text (the bundled MEDEC validation file's notes without an error)."""

from __future__ import annotations

import csv
from pathlib import Path

from medical_team.data.medec import VALIDATION_CSV, bundled_csv, load_medec


def write_plain_csv(path: Path, count: int, per_patient: int = 1) -> Path:
    """`note_id,note,patient` rows n1..n<count> (sequential ids), `per_patient` consecutive notes per patient."""
    clean = [note.text for note in load_medec(bundled_csv(VALIDATION_CSV)).notes if not note.error_flag]
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["note_id", "note", "patient"])
        for number, text in enumerate(clean[:count], start=1):
            writer.writerow([f"n{number}", text, f"p{(number - 1) // per_patient + 1}"])
    return path
