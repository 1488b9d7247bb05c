"""A hand-written MEDEC-like seed of any category, for tests that settle games on a note whose error is known."""

from __future__ import annotations

from medical_team.common.vocab import Category, Label
from medical_team.data.records import GameSeed

ERROR_SENTENCE = "He was given 50 mg of warfarin daily."
CORRECTED_SENTENCE = "He was given 5 mg of warfarin daily."
NOTE = f"A 70-year-old man with atrial fibrillation. {ERROR_SENTENCE}"


def seed_of(category: Category, note_id: str = "ms-val-1") -> GameSeed:
    """A seed of this category; harmful seeds know their error, benign ones none (as the seed builder makes them)."""
    harmful = category.seed_label is Label.ERROR
    return GameSeed(
        note_id=note_id,
        pair_id=note_id,
        category=category,
        label=category.seed_label,
        text=NOTE,
        error_type="pharmacotherapy" if harmful else None,
        error_sentence_id=1 if harmful else -1,
        error_sentence=ERROR_SENTENCE if harmful else None,
        corrected_sentence=CORRECTED_SENTENCE if harmful else None,
        source_file="val.csv",
    )
