"""The dataset report: what was loaded, skipped and repaired, and how seeds spread over categories, types and splits."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from medical_team.common.vocab import ERROR_TYPES, Category, Label
from medical_team.data.medec import LoadResult
from medical_team.data.plain_notes import PlainNotes
from medical_team.data.records import GameSeed, MedecNote

NO_TYPE = "none"  # error-type column for seeds of clean notes and files without `Error Type`


def file_summary(result: LoadResult) -> dict[str, Any]:
    """Counts for one loaded file: rows read, notes kept by flag and type, rows skipped and repaired (by reason)."""
    return {
        "file": result.source_file,
        "rows_read": result.rows_read,
        "notes": len(result.notes),
        "error_notes": sum(note.error_flag for note in result.notes),
        "clean_notes": sum(not note.error_flag for note in result.notes),
        "rows_skipped": sum(result.skipped.values()),
        "skipped": dict(sorted(result.skipped.items())),
        "rows_repaired": dict(sorted(result.repaired.items())),
        "ignored_columns": list(result.ignored_columns),
        "error_types": error_type_counts(result.notes),
    }


def plain_file_summary(read: PlainNotes, file: str, notes_are_clean: bool) -> dict[str, Any]:
    """Counts for a plain-notes input, keyed as `file_summary`'s: no labels, every bad row skipped named."""
    return {
        "file": file,
        "rows_read": len(read.notes) + len(read.skipped),
        "notes": len(read.notes),
        "labels": "none, asserted clean (--notes-are-clean)" if notes_are_clean else "none",
        "error_notes": None,  # unknown: no note carries a label
        "clean_notes": len(read.notes) if notes_are_clean else None,
        "rows_skipped": len(read.skipped),
        "skipped": dict(sorted(Counter(bad.reason for bad in read.skipped).items())),
        "skipped_rows": [bad.describe() for bad in read.skipped],
        "rows_repaired": {},
        "ignored": list(read.ignored),
    }


def error_type_counts(notes: Iterable[MedecNote]) -> dict[str, int]:
    """Error notes per error type (in vocabulary order, unknown types last)."""
    counts = Counter(note.error_type or NO_TYPE for note in notes if note.error_flag)
    return _ordered(counts)


def case_error_types(seeds: Iterable[GameSeed]) -> dict[str, str]:
    """Pair id -> error type of the case (a benign seed takes the type of the error it was corrected from)."""
    return {seed.pair_id: seed.error_type or NO_TYPE for seed in seeds if seed.label is Label.ERROR}


def seed_table(seeds: Sequence[GameSeed], types: dict[str, str] | None = None) -> dict[str, dict[str, int]]:
    """Category -> error type of the case -> seed count, with a `total` per category."""
    types = types if types is not None else case_error_types(seeds)
    table: dict[str, dict[str, int]] = {}
    for category in Category:
        members = [seed for seed in seeds if seed.category is category]
        counts = _ordered(Counter(types.get(seed.pair_id, NO_TYPE) for seed in members))
        table[category.value] = {**counts, "total": len(members)}
    return table


def split_summary(seeds: Sequence[GameSeed], groups: dict[str, str], types: dict[str, str]) -> dict[str, Any]:
    """Counts for one split: seeds, notes, case groups, and the category x error-type table."""
    note_ids = {seed.note_id for seed in seeds}
    return {
        "seeds": len(seeds),
        "notes": len(note_ids),
        "case_groups": len({groups.get(note_id, note_id) for note_id in note_ids}),
        "by_category": seed_table(seeds, types),
    }


def _ordered(counts: Counter[str]) -> dict[str, int]:
    """Counts keyed in vocabulary order, then other keys sorted, then `none`."""
    keys = [t for t in ERROR_TYPES if t in counts]
    keys += sorted(k for k in counts if k not in ERROR_TYPES and k != NO_TYPE)
    keys += [NO_TYPE] if NO_TYPE in counts else []
    return {key: counts[key] for key in keys}
