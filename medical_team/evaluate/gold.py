"""The reference side of the benchmark: what is known about each MEDEC test note's error."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from medical_team.common.errors import UserInputError
from medical_team.data.records import MedecNote

# Keys of a benchmark row's `extra_info` that scoring reads.
GOLD_KEYS: tuple[str, ...] = (
    "text_id",
    "error_flag",
    "error_type",
    "error_sentence_id",
    "error_sentence",
    "corrected_sentence",
    "sentences",
)


@dataclass(frozen=True)
class GoldNote:
    """The ground truth of one benchmark note."""

    text_id: str
    error_flag: bool
    error_type: str | None  # None for clean notes
    error_sentence_id: int  # -1 for clean notes
    error_sentence: str | None
    corrected_sentence: str | None
    sentences: tuple[str, ...]  # sentence k of the note at index k

    @property
    def last_sentence_id(self) -> int:
        """Id of the note's last sentence."""
        return len(self.sentences) - 1

    @classmethod
    def from_note(cls, note: MedecNote) -> GoldNote:
        """The ground truth of a loaded MEDEC note."""
        return cls(
            text_id=note.text_id,
            error_flag=note.error_flag,
            error_type=note.error_type,
            error_sentence_id=note.error_sentence_id,
            error_sentence=note.error_sentence,
            corrected_sentence=note.corrected_sentence,
            sentences=tuple(note.sentences),
        )

    @classmethod
    def from_extra_info(cls, info: Mapping[str, Any], *, file: str | None = None, row: int | None = None) -> GoldNote:
        """The ground truth stored in a benchmark row's `extra_info`; `UserInputError` if a key is missing."""
        for key in GOLD_KEYS:
            if key not in info:
                raise UserInputError(
                    "missing from extra_info; is this a benchmark file written by `medplay convert`?",
                    file=file,
                    row=row,
                    field=f"extra_info.{key}",
                )
        sentences: Sequence[Any] = info["sentences"]
        return cls(
            text_id=str(info["text_id"]),
            error_flag=bool(info["error_flag"]),
            error_type=info["error_type"] or None,
            error_sentence_id=int(info["error_sentence_id"]),
            error_sentence=info["error_sentence"] or None,
            corrected_sentence=info["corrected_sentence"] or None,
            sentences=tuple(str(s) for s in sentences),
        )
