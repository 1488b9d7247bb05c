"""Typed records that flow from the MEDEC loader through seeds into the game."""

from __future__ import annotations

from dataclasses import MISSING, dataclass
from typing import Any

from medical_team.common.vocab import Category, Label


@dataclass(frozen=True)
class MedecNote:
    """One cleaned MEDEC note (a row of a MEDEC-MS CSV)."""

    text_id: str
    text: str
    sentences: tuple[str, ...]  # sentence k of the note at index k
    error_flag: bool
    error_type: str | None  # None for clean notes, and for files without the column
    error_sentence_id: int  # -1 for clean notes
    error_sentence: str | None
    corrected_sentence: str | None
    corrected_text: str | None
    source_file: str  # file name the note came from
    source_row: int  # 1-based data row in that file (header excluded)


@dataclass(frozen=True)
class GameSeed:
    """One game (docs/game.md): a seed note with its label, category and everything known of its error."""

    note_id: str  # MEDEC Text ID of the note the seed came from
    pair_id: str  # shared by the harmful and benign seed of one error note
    category: Category
    label: Label  # truth of the seed text itself
    text: str  # the seed note the attacker (or, in vanilla games, the assessor) sees
    error_type: str | None
    error_sentence_id: int
    error_sentence: str | None
    corrected_sentence: str | None
    source_file: str
    sentences: tuple[str, ...] = ()  # the seed text's sentences (sentence k at index k), for localisation

    def __post_init__(self) -> None:
        # Callers pass lists (JSON, parquet, pydantic); a tuple keeps seeds comparable and hashable.
        if not isinstance(self.sentences, tuple):
            object.__setattr__(self, "sentences", tuple(self.sentences))

    def metadata(self) -> dict[str, Any]:
        """The seed's fields as plain JSON-able values (enums as their string values)."""
        # Every field is a scalar, an enum or a tuple of strings: a shallow copy. `asdict`'s deep copy took half
        # of `medplay convert`'s time (two calls per game row).
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["category"] = self.category.value
        out["label"] = self.label.value
        out["sentences"] = list(self.sentences)
        return out

    @classmethod
    def from_metadata(cls, meta: dict[str, Any]) -> GameSeed:
        """Rebuild a seed from `metadata()` output (extra keys are ignored; fields with defaults may be absent)."""
        fields = {
            name: meta[name]
            for name, spec in cls.__dataclass_fields__.items()
            if name in meta or spec.default is MISSING
        }
        fields["category"] = Category(fields["category"])
        fields["label"] = Label(fields["label"])
        fields["error_sentence_id"] = int(fields["error_sentence_id"])
        if "sentences" in fields:
            fields["sentences"] = tuple(fields["sentences"])
        return cls(**fields)
