"""Game seeds from MEDEC notes: a harmful and a benign seed per error note, then a seeded adversarial draw."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

import numpy as np

from medical_team.common.vocab import Category, Label
from medical_team.data.records import GameSeed, MedecNote


def no_error_seed(note_id: str, source_file: str, text: str, sentences: tuple[str, ...] = ()) -> GameSeed:
    """A benign seed (label `no_error`, no error fields) of note `note_id` with this text and these sentences."""
    return GameSeed(
        note_id=note_id,
        pair_id=note_id,
        category=Category.VANILLA_BENIGN,
        label=Label.NO_ERROR,
        text=text,
        error_type=None,
        error_sentence_id=-1,
        error_sentence=None,
        corrected_sentence=None,
        source_file=source_file,
        sentences=sentences,
    )


def harmful_seed(note: MedecNote) -> GameSeed:
    """The error note as written (label `error`); its category is set by `assign_categories`."""
    return GameSeed(
        note_id=note.text_id,
        pair_id=note.text_id,
        category=Category.VANILLA_HARMFUL,
        label=Label.ERROR,
        text=note.text,
        error_type=note.error_type,
        error_sentence_id=note.error_sentence_id,
        error_sentence=note.error_sentence,
        corrected_sentence=note.corrected_sentence,
        source_file=note.source_file,
        sentences=note.sentences,
    )


def benign_seed(note: MedecNote) -> GameSeed:
    """The corrected note (label `no_error`): the error sentence replaced by its correction.

    Its error fields are empty because the benign text holds no error; `pair_id` links it to the
    harmful seed that describes the error it was corrected from.
    """
    sentences = list(note.sentences)
    sentences[note.error_sentence_id] = note.corrected_sentence or ""
    return no_error_seed(note.text_id, note.source_file, note.corrected_text or "", tuple(sentences))


def clean_seed(note: MedecNote) -> GameSeed:
    """A note with `Error Flag = 0` as a further benign seed (its own pair)."""
    return no_error_seed(note.text_id, note.source_file, note.text, note.sentences)


def unplayed_seeds(notes: Iterable[MedecNote], include_clean_notes: bool = False) -> list[GameSeed]:
    """Vanilla seeds in note order: harmful then benign per error note, plus clean notes when asked."""
    seeds: list[GameSeed] = []
    for note in notes:
        if note.error_flag:
            seeds += [harmful_seed(note), benign_seed(note)]
        elif include_clean_notes:
            seeds.append(clean_seed(note))
    return seeds


def assign_categories(seeds: Sequence[GameSeed], seed: int) -> list[GameSeed]:
    """Mark half of each label group (floor of half, drawn with `seed`) adversarial; order is kept."""
    rng = np.random.default_rng(seed)
    adversarial: set[int] = set()
    for label in Label:
        members = [index for index, game_seed in enumerate(seeds) if game_seed.label is label]
        drawn = rng.permutation(len(members))[: len(members) // 2]
        adversarial.update(members[int(position)] for position in drawn)
    return [
        replace(game_seed, category=Category.of(game_seed.label, index in adversarial))
        for index, game_seed in enumerate(seeds)
    ]


def build_seeds(notes: Iterable[MedecNote], seed: int, include_clean_notes: bool = False) -> list[GameSeed]:
    """All game seeds of these notes with their categories drawn from `seed`."""
    return assign_categories(unplayed_seeds(notes, include_clean_notes), seed)
