"""Train/validation split of game seeds: grouped by case, stratified by categories and error type."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from medical_team.common.errors import UserInputError
from medical_team.data.records import GameSeed, MedecNote

TRAIN = "train"
VAL = "val"

_NUMBERED_ID = re.compile(r"^(.*?)(\d+)$")


@dataclass(frozen=True)
class SeedSplit:
    """Seeds of each split (in input order) and the case group every note belongs to."""

    train: tuple[GameSeed, ...]
    val: tuple[GameSeed, ...]
    groups: dict[str, str]  # note id -> group id (the id of the group's first note)


def case_groups(notes: Iterable[MedecNote]) -> dict[str, str]:
    """Note id -> group id: a clean note (flag 0) joins the note numbered one below it, when present.

    In MEDEC every clean note n + 1 is a reworded variant of error note n; keeping them together stops
    the same case from appearing on both sides of the split.
    """
    notes = list(notes)
    by_number: dict[tuple[str, int], str] = {}
    for note in notes:
        match = _NUMBERED_ID.match(note.text_id)
        if match:
            by_number[(match.group(1), int(match.group(2)))] = note.text_id
    groups: dict[str, str] = {}
    for note in notes:
        groups[note.text_id] = note.text_id
        match = _NUMBERED_ID.match(note.text_id)
        if not note.error_flag and match:
            previous = by_number.get((match.group(1), int(match.group(2)) - 1))
            if previous is not None:
                groups[note.text_id] = groups[previous]
    return groups


def stratum_of(seeds: Sequence[GameSeed]) -> tuple[str, ...]:
    """A group's stratum: its error type and the sorted categories of its seeds."""
    error_type = next((seed.error_type for seed in seeds if seed.error_type), None) or "none"
    return (error_type, *sorted(seed.category.value for seed in seeds))


def split_seeds(seeds: Sequence[GameSeed], groups: dict[str, str], val_ratio: float, seed: int) -> SeedSplit:
    """Split seeds so that no case group straddles splits and every stratum is split in proportion.

    Groups are shuffled within their stratum, strata are laid end to end, and a systematic sample with a
    random start takes every (1 / val_ratio)-th group for validation: each stratum gets its share +- 1.
    """
    if not 0.0 < val_ratio < 1.0:
        raise UserInputError(f"must be between 0 and 1 (exclusive), got {val_ratio}", field="--val-ratio")
    members: dict[str, list[GameSeed]] = defaultdict(list)
    for game_seed in seeds:
        members[groups.get(game_seed.note_id, game_seed.note_id)].append(game_seed)
    if len(members) < 2:
        raise UserInputError(f"need at least 2 case groups to split, found {len(members)}", field="--input")
    rng = np.random.default_rng(seed)
    strata: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for group_id, group_seeds in members.items():
        strata[stratum_of(group_seeds)].append(group_id)
    ordered = [strata[key][int(i)] for key in sorted(strata) for i in rng.permutation(len(strata[key]))]
    start = rng.random()
    positions = np.floor((np.arange(len(ordered) + 1) + start) * val_ratio)
    val_groups = {group_id for group_id, step in zip(ordered, np.diff(positions)) if step > 0}
    # Tiny inputs: keep both splits non-empty.
    if not val_groups:
        val_groups = {ordered[0]}
    elif len(val_groups) == len(ordered):
        val_groups.discard(ordered[0])
    val = tuple(s for s in seeds if groups.get(s.note_id, s.note_id) in val_groups)
    train = tuple(s for s in seeds if groups.get(s.note_id, s.note_id) not in val_groups)
    return SeedSplit(train=train, val=val, groups=dict(groups))
