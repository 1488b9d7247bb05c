"""MEDEC-MS CSV loader: maps columns by name, repairs text, drops and counts empty rows, returns typed notes.

Rows are numbered as data rows from 1 (the header is row 0), the same numbers `MedecNote.source_row` holds.
"""

from __future__ import annotations

import importlib.resources
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from medical_team.common.errors import UserInputError
from medical_team.common.vocab import ERROR_TYPES
from medical_team.data.medec_csv import decode_file, parse_csv
from medical_team.data.records import MedecNote
from medical_team.data.text import (
    SentenceParseError,
    blank_to_none,
    normalise_newlines,
    parse_sentences,
    repair_mojibake,
    same_text,
)

TEXT_ID = "Text ID"
TEXT = "Text"
SENTENCES = "Sentences"
ERROR_FLAG = "Error Flag"
ERROR_TYPE = "Error Type"
ERROR_SENTENCE_ID = "Error Sentence ID"
ERROR_SENTENCE = "Error Sentence"
CORRECTED_SENTENCE = "Corrected Sentence"
CORRECTED_TEXT = "Corrected Text"

REQUIRED_COLUMNS: tuple[str, ...] = (
    TEXT_ID,
    TEXT,
    SENTENCES,
    ERROR_FLAG,
    ERROR_SENTENCE_ID,
    ERROR_SENTENCE,
    CORRECTED_SENTENCE,
    CORRECTED_TEXT,
)
OPTIONAL_COLUMNS: tuple[str, ...] = (ERROR_TYPE,)

# Reasons under which `LoadResult.skipped` / `LoadResult.repaired` count rows.
SKIP_EMPTY_ROW = "empty row (every cell blank)"
REPAIR_MOJIBAKE = "double-encoded characters repaired (ftfy)"
REPAIR_NEWLINES = "CRLF line endings normalised to LF"
REPAIR_TRAILING_BLANKS = "blank trailing fields filled (row shorter than the header)"

# Builds the error for a column of the row being read: fail(column, message).
Fail = Callable[[str, str], UserInputError]

# The MEDEC-MS files bundled with the package: the game's training source and the held-out benchmark.
VALIDATION_CSV = "MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"
TEST_CSV = "MEDEC-MS-TestSet-with-GroundTruth-and-ErrorType.csv"


def bundled_csv(name: str) -> Path:
    """Path of a MEDEC-MS CSV shipped in `medical_team/data/resources`."""
    return Path(str(importlib.resources.files("medical_team.data.resources") / name))


@dataclass(frozen=True)
class LoadResult:
    """What `load_medec` read from one file: the notes plus what it skipped, repaired or ignored."""

    source_file: str
    notes: tuple[MedecNote, ...]
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> rows dropped
    repaired: dict[str, int] = field(default_factory=dict)  # reason -> rows changed
    ignored_columns: tuple[str, ...] = ()  # columns not used (e.g. a leading unnamed index)

    @property
    def rows_read(self) -> int:
        """Data rows in the file (kept plus skipped)."""
        return len(self.notes) + sum(self.skipped.values())


def load_medec(path: str | Path, encoding: str = "utf-8") -> LoadResult:
    """Load a MEDEC-MS CSV into `MedecNote`s; raise `UserInputError` naming file, row and field on bad input."""
    path = Path(path)
    name = path.name
    text = decode_file(path, name, encoding)
    if not text.strip():
        raise UserInputError(
            f"the file is empty; expected a header with the columns {', '.join(REQUIRED_COLUMNS)}",
            file=name,
            row=0,
            field=TEXT_ID,
        )
    table = parse_csv(text, name)
    columns, ignored = _map_columns(table.names, name)

    skipped: Counter[str] = Counter()
    repaired: Counter[str] = Counter()
    notes: list[MedecNote] = []
    seen_ids: dict[str, int] = {}
    width = len(table.names)
    for row, record in enumerate(table.records, start=1):
        values = record[table.index_fields :]
        if not any(cell.strip() for cell in values):
            skipped[SKIP_EMPTY_ROW] += 1
            continue
        raw = {canonical: values[index] if index < len(values) else "" for canonical, index in columns.items()}
        cells, reasons = _clean_cells(raw)
        if len(record) < width:
            reasons.add(REPAIR_TRAILING_BLANKS)
        repaired.update(reasons)
        note = _note_from_cells(cells, name, row)
        if note.text_id in seen_ids:
            raise UserInputError(
                f"duplicate Text ID {note.text_id!r} (first seen on row {seen_ids[note.text_id]})",
                file=name,
                row=row,
                field=TEXT_ID,
            )
        seen_ids[note.text_id] = row
        notes.append(note)
    if not notes:
        raise UserInputError("the file has a header but no notes", file=name, row=1, field=TEXT_ID)
    return LoadResult(name, tuple(notes), dict(skipped), dict(repaired), tuple(ignored))


def _map_columns(header: list[str], name: str) -> tuple[dict[str, int], list[str]]:
    """Map canonical column names to positions, by name (case and surrounding spaces ignored)."""
    wanted = {column.casefold(): column for column in REQUIRED_COLUMNS + OPTIONAL_COLUMNS}
    columns: dict[str, int] = {}
    ignored: list[str] = []
    for index, raw_name in enumerate(header):
        clean_name = " ".join(str(raw_name).split())
        canonical = wanted.get(clean_name.casefold())
        if canonical is None:
            ignored.append(raw_name)
        elif canonical in columns:
            raise UserInputError(f"column {canonical!r} appears twice in the header", file=name, row=0, field=canonical)
        else:
            columns[canonical] = index
    for column in REQUIRED_COLUMNS:
        if column not in columns:
            raise UserInputError(
                f"required column is missing from the header (found: {', '.join(map(str, header))})",
                file=name,
                row=0,
                field=column,
            )
    return columns, ignored


def _clean_cells(raw: dict[str, str]) -> tuple[dict[str, str], set[str]]:
    """Cells with line endings normalised and mojibake repaired, and the repair reasons that applied."""
    reasons: set[str] = set()
    cells: dict[str, str] = {}
    for column, value in raw.items():
        value = str(value)
        unix = normalise_newlines(value)
        if unix != value:
            reasons.add(REPAIR_NEWLINES)
        fixed = repair_mojibake(unix)
        if fixed != unix:
            reasons.add(REPAIR_MOJIBAKE)
        cells[column] = fixed
    return cells, reasons


def _note_from_cells(cells: dict[str, str], name: str, row: int) -> MedecNote:
    """Validate one row's cleaned cells and build its note."""

    def fail(column: str, message: str) -> UserInputError:
        return UserInputError(message, file=name, row=row, field=column)

    text_id = blank_to_none(cells[TEXT_ID])
    if text_id is None:
        raise fail(TEXT_ID, "empty Text ID in a row that has other values; every note needs an id")
    flag = _integer(cells[ERROR_FLAG], fail, ERROR_FLAG)
    if flag not in (0, 1):
        raise fail(ERROR_FLAG, f"must be 0 or 1, found {cells[ERROR_FLAG].strip()!r}")
    text = blank_to_none(cells[TEXT])
    if text is None:
        raise fail(TEXT, "the note text is empty")
    try:
        sentences = parse_sentences(cells[SENTENCES])
    except SentenceParseError as error:
        raise fail(SENTENCES, str(error)) from None
    error_type = blank_to_none(cells.get(ERROR_TYPE, ""))
    sentence_id_cell = cells[ERROR_SENTENCE_ID].strip()
    sentence_id = -1 if sentence_id_cell in ("", "NA") else _integer(sentence_id_cell, fail, ERROR_SENTENCE_ID)
    error_sentence = blank_to_none(cells[ERROR_SENTENCE])
    corrected_sentence = blank_to_none(cells[CORRECTED_SENTENCE])
    corrected_text = blank_to_none(cells[CORRECTED_TEXT])
    if flag == 1:
        _check_error_row(fail, sentences, error_type, sentence_id, error_sentence, corrected_sentence, corrected_text)
    else:
        if sentence_id != -1:
            raise fail(ERROR_SENTENCE_ID, f"a note with Error Flag 0 must have -1 here, found {sentence_id}")
        error_type = error_sentence = corrected_sentence = None
        corrected_text = None
    return MedecNote(
        text_id=text_id,
        text=text,
        sentences=sentences,
        error_flag=flag == 1,
        error_type=error_type,
        error_sentence_id=sentence_id,
        error_sentence=error_sentence,
        corrected_sentence=corrected_sentence,
        corrected_text=corrected_text,
        source_file=name,
        source_row=row,
    )


def _check_error_row(
    fail: Fail,
    sentences: tuple[str, ...],
    error_type: str | None,
    sentence_id: int,
    error_sentence: str | None,
    corrected_sentence: str | None,
    corrected_text: str | None,
) -> None:
    """Raise unless an `Error Flag = 1` row names a known type and a sentence that exists and matches."""
    if error_type is not None and error_type not in ERROR_TYPES:
        raise fail(ERROR_TYPE, f"unknown error type {error_type!r}; expected one of {', '.join(ERROR_TYPES)}")
    for column, value in (
        (ERROR_SENTENCE, error_sentence),
        (CORRECTED_SENTENCE, corrected_sentence),
        (CORRECTED_TEXT, corrected_text),
    ):
        if value is None:
            raise fail(column, "empty in a note with Error Flag 1")
    if not 0 <= sentence_id < len(sentences):
        raise fail(ERROR_SENTENCE_ID, f"{sentence_id} is not a sentence of this note (it has {len(sentences)})")
    if not same_text(sentences[sentence_id], error_sentence):
        raise fail(
            ERROR_SENTENCE,
            f"does not match sentence {sentence_id} of 'Sentences' ({sentences[sentence_id][:60]!r})",
        )


def _integer(cell: str, fail: Fail, column: str) -> int:
    """The cell as an integer, or a `UserInputError` for this column."""
    value = cell.strip()
    if not re.fullmatch(r"[+-]?\d+", value):
        raise fail(column, f"must be an integer, found {value!r}")
    return int(value)
