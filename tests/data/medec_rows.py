"""Small valid MEDEC-style rows for tests that write their own CSVs."""

from __future__ import annotations

HEADER = [
    "Text ID",
    "Text",
    "Sentences",
    "Error Flag",
    "Error Type",
    "Error Sentence ID",
    "Error Sentence",
    "Corrected Sentence",
    "Corrected Text",
]


def error_row(number: int, prefix: str = "ms-t-") -> list[str]:
    """A valid MEDEC error note (pharmacotherapy error in sentence 1)."""
    return [
        f"{prefix}{number}",
        "A 60-year-old man has chest pain. He is given ibuprofen.",
        "0 A 60-year-old man has chest pain.\n1 He is given ibuprofen.",
        "1",
        "pharmacotherapy",
        "1",
        "He is given ibuprofen.",
        "He is given aspirin.",
        "A 60-year-old man has chest pain. He is given aspirin.",
    ]


def clean_row(number: int, prefix: str = "ms-t-") -> list[str]:
    """A valid MEDEC clean note in MEDEC's style (`NA`, `-1`)."""
    return [
        f"{prefix}{number}",
        "A 60 year old man reports chest pain. Aspirin is given.",
        "0 A 60 year old man reports chest pain.\n1 Aspirin is given.",
        "0",
        "NA",
        "-1",
        "NA",
        "NA",
        "NA",
    ]
