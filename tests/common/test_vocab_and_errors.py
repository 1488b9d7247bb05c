"""The shared vocabulary (`medical_team.common.vocab`) and user-facing errors (`medical_team.common.errors`)."""

from __future__ import annotations

import json

import pytest

from medical_team.common.errors import UserInputError
from medical_team.common.vocab import Category, Label
from medical_team.data.records import GameSeed


@pytest.mark.parametrize("category", list(Category))
def test_category_round_trips_through_label_and_adversarial(category: Category) -> None:
    assert Category.of(category.seed_label, category.adversarial) is category


def test_seed_metadata_round_trips() -> None:
    seed = GameSeed(
        note_id="ms-val-0", pair_id="ms-val-0", category=Category.ADVERSARIAL_HARMFUL, label=Label.ERROR,
        text="A note.", error_type="diagnosis", error_sentence_id=0, error_sentence="A note.",
        corrected_sentence="A better note.", source_file="val.csv",
    )  # fmt: skip
    meta = seed.metadata()
    assert json.loads(json.dumps(meta)) == meta
    assert GameSeed.from_metadata(meta) == seed


def test_user_input_error_names_file_row_and_field() -> None:
    error = UserInputError("not an integer: 'x'", file="notes.csv", row=7, field="Error Flag")
    assert error.one_line() == "notes.csv:row 7: field 'Error Flag': not an integer: 'x'"
