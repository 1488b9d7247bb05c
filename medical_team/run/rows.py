"""The game seed a verl dataset row carries in `extra_info`: game rows and MEDEC benchmark rows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from medical_team.common.vocab import BENCHMARK_DATA_SOURCE, BenignAttackMode, Category, Label
from medical_team.data.records import GameSeed
from medical_team.data.verl_parquet import BENCHMARK_EXTRA_FIELDS

_GAME_KEYS = (*GameSeed.__dataclass_fields__, "benign_mode")


def _require(extra_info: Any, keys: tuple[str, ...], what: str) -> Mapping[str, Any]:
    """`extra_info` as a mapping holding every key, or a ValueError naming what is missing."""
    if not isinstance(extra_info, Mapping):
        raise TypeError(f"{what} row extra_info must be a dict, got {type(extra_info).__name__}")
    missing = [key for key in keys if key not in extra_info]
    if missing:
        raise ValueError(f"{what} row extra_info lacks {', '.join(missing)}; write the data with `medplay convert`")
    return extra_info


def seed_of_row(data_source: str | None, extra_info: Any) -> tuple[GameSeed, BenignAttackMode]:
    """The seed a row describes and the attack mode for clean seeds (benchmark rows: a vanilla seed, inject)."""
    if data_source == BENCHMARK_DATA_SOURCE:
        return benchmark_seed(_require(extra_info, BENCHMARK_EXTRA_FIELDS, "benchmark")), BenignAttackMode.INJECT
    info = _require(extra_info, _GAME_KEYS, "game")
    return GameSeed.from_metadata(dict(info)), BenignAttackMode(info["benign_mode"])


def benchmark_seed(info: Mapping[str, Any]) -> GameSeed:
    """A vanilla seed for one MEDEC benchmark note (the note as-is, with its ground truth)."""
    label = Label(info["label"])
    return GameSeed(
        note_id=str(info["text_id"]),
        pair_id=str(info["text_id"]),
        category=Category.of(label, adversarial=False),
        label=label,
        text=info["text"],
        error_type=info["error_type"],
        error_sentence_id=int(info["error_sentence_id"]),
        error_sentence=info["error_sentence"],
        corrected_sentence=info["corrected_sentence"],
        source_file=info["source_file"],
    )
