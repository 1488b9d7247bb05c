"""MEDEC-MS CSV loader: maps columns by name, repairs text, drops and counts empty rows, returns typed notes.

Rows are numbered as data rows from 1 (the header is row 0), the same numbers `MedecNote.source_row` holds.
"""

from __future__ import annotations

import csv
import importlib.resources
import io
import itertools
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from medical_team.data.records import MedecNote
from medical_team.data.text import (
    SentenceParseError,
    blank_to_none,
    normalise_newlines,
    parse_sentences,
    repair_mojibake,
    same_text,
)
from medical_team.errors import UserInputError
from medical_team.vocab import ERROR_TYPES

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

_SURROGATE = re.compile("[\udc80-\udcff]")

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
    import pandas as pd

    path = Path(path)
    name = path.name
    text = _decode(path, name, encoding)
    if not text.strip():
        raise UserInputError(
            f"the file is empty; expected a header with the columns {', '.join(REQUIRED_COLUMNS)}",
            file=name,
            row=0,
            field=TEXT_ID,
        )
    undecodable = _find_undecodable(text, name)
    if undecodable:
        raise undecodable
    try:
        # Blank lines are kept as rows so that row numbers match the CSV's records (they are dropped as empty rows).
        frame = pd.read_csv(
            io.StringIO(text), dtype=str, keep_default_na=False, na_filter=False, skip_blank_lines=False
        )
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as error:
        raise _structure_error(text, name, str(error)) from None
    columns, ignored = _map_columns(list(frame.columns), name)

    skipped: Counter[str] = Counter()
    repaired: Counter[str] = Counter()
    notes: list[MedecNote] = []
    seen_ids: dict[str, int] = {}
    short_rows = set(_short_rows(text))
    for position, values in enumerate(frame.itertuples(index=False, name=None)):
        row = position + 1
        raw = {canonical: values[index] for canonical, index in columns.items()}
        if all(not str(cell).strip() for cell in values):
            skipped[SKIP_EMPTY_ROW] += 1
            continue
        cells, reasons = _clean_cells(raw)
        if row in short_rows:
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


def _decode(path: Path, name: str, encoding: str) -> str:
    """The file's text; undecodable bytes become lone surrogates so they can be located after parsing."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UserInputError("no such file", file=str(path), field="--input") from None
    except IsADirectoryError:
        raise UserInputError("is a directory, expected a CSV file", file=str(path), field="--input") from None
    except OSError as error:
        raise UserInputError(f"cannot read the file: {error.strerror}", file=str(path), field="--input") from None
    try:
        text = data.decode(encoding, errors="surrogateescape")
    except LookupError:
        raise UserInputError(f"unknown encoding {encoding!r}", file=name, field="--encoding") from None
    return text.removeprefix("\ufeff")


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


def _find_undecodable(text: str, name: str) -> UserInputError | None:
    """An error for the first cell holding a byte the encoding could not decode (a lone surrogate), if any."""
    if not _SURROGATE.search(text):
        return None
    try:
        records = csv.reader(io.StringIO(text))
        header = next(records, [])
        for row, fields in enumerate(itertools.chain([header], records)):
            for position, cell in enumerate(fields):
                match = _SURROGATE.search(cell)
                if match:
                    byte = ord(match.group()) - 0xDC00
                    column = header[position] if row and position < len(header) else f"column {position + 1}"
                    return UserInputError(
                        f"byte 0x{byte:02x} at character {match.start()} cannot be decoded; save the file as UTF-8 "
                        "(or pass --encoding, e.g. cp1252 for older MEDEC releases)",
                        file=name,
                        row=row,
                        field=column,
                    )
    except csv.Error:
        pass
    # Not even CSV-shaped (binary data): fall back to the physical line and the commas before the byte.
    before = text[: _SURROGATE.search(text).start()]
    line = before.count("\n") + 1
    return UserInputError(
        f"undecodable byte on line {line}; this does not look like a UTF-8 CSV file",
        file=name,
        row=line - 1,
        field=f"column {before.rsplit(chr(10), 1)[-1].count(',') + 1}",
    )


def _short_rows(text: str) -> list[int]:
    """Data rows with fewer fields than the header (pandas fills them with blanks)."""
    reader = csv.reader(io.StringIO(text))
    width = len(next(reader, []))
    return [row for row, fields in enumerate(reader, start=1) if 0 < len(fields) < width and any(fields)]


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


def _structure_error(text: str, name: str, parser_message: str) -> UserInputError:
    """Locate a CSV the parser rejects (too many fields, unclosed quote) by row and column."""
    try:
        records = list(csv.reader(io.StringIO(text)))
    except csv.Error:
        records = []
    header, body = (records[0], records[1:]) if records else ([], [])
    if "EOF inside string" in parser_message and body:
        last = len(body[-1]) - 1
        column = header[last] if 0 <= last < len(header) else f"column {last + 1}"
        return UserInputError(
            'a double-quoted value starts in this row and is never closed (unbalanced ")',
            file=name,
            row=len(body),
            field=column,
        )
    for row, fields in enumerate(body, start=1):
        if len(fields) > len(header):
            return UserInputError(
                f"the row has {len(fields)} fields but the header has {len(header)} columns",
                file=name,
                row=row,
                field=f"column {len(header) + 1}",
            )
    message = parser_message.replace("Error tokenizing data. C error: ", "").strip()
    return UserInputError(f"not a valid CSV file: {message}", file=name, row=None, field="CSV structure")
