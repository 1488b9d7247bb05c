"""Candidate rows of plain notes, one reader per format: a CSV, a JSONL file, a folder of `.txt` files.

Each turns its input into `CandidateRow`s (id and text as found, or the problem that makes the row unreadable as a
whole) and says which columns it used; `plain_notes.read_plain_notes` checks them and builds the notes.
"""

from __future__ import annotations

import csv
import functools
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from medical_team.common.errors import UserInputError
from medical_team.data.plain_columns import (
    ID_COLUMNS,
    ID_OPTION,
    TEXT_COLUMNS,
    TEXT_OPTION,
    NoteColumns,
    either,
    first_held,
    found_options,
    header_column,
    wanted,
)
from medical_team.data.text import normalise_newlines

CSV_SUFFIXES = frozenset({".csv"})
JSONL_SUFFIXES = frozenset({".jsonl", ".ndjson"})
TXT_SUFFIX = ".txt"

# The field a BadRow names when the problem is the whole JSONL line or the whole CSV record, not one value.
WHOLE_LINE = "(whole line)"
WHOLE_ROW = "(whole row)"
# The fields a BadRow names for a .txt file (the file's name is the note id, its contents the note text).
FILE_NAME = "(file name)"
FILE_TEXT = "(file text)"


@dataclass(frozen=True)
class CandidateRow:
    """One candidate note before validation; `problem` is set when it is unreadable as a whole."""

    file: str
    row: int | None
    names: tuple[str, str]  # the id field's and the text field's names, for BadRow.field
    note_id: str | None
    text: str | None
    columns: dict[str, str]
    problem: tuple[str, str] | None = None  # (field, reason)


def candidate_row(
    file: str,
    number: int | None,
    names: tuple[str, str],
    note_id: str | None,
    text: str | None,
    *,
    columns: Mapping[str, str] | None = None,
    problem: tuple[str, str] | None = None,
) -> CandidateRow:
    """A candidate row: id stripped, text with LF line endings and no outer blank space."""
    note_id = note_id.strip() if note_id is not None else None
    text = normalise_newlines(text).strip() if text is not None else None
    return CandidateRow(file, number, names, note_id, text, dict(columns or {}), problem)


def csv_rows(
    lines: Iterable[str], source: str, id_field: str | None, text_field: str | None
) -> tuple[list[CandidateRow], list[str], NoteColumns]:
    """Candidate rows of a CSV (its lines, read with newline="") with a header that holds the id and text columns,
    and the columns they came from."""
    reader = csv.reader(lines)
    try:
        header = next(reader, None)
    except csv.Error as error:
        raise UserInputError(f"the header is not valid CSV: {error}", file=source, row=0) from None
    id_wanted, text_wanted = wanted(id_field, ID_COLUMNS), wanted(text_field, TEXT_COLUMNS)
    if not header or not any(cell.strip() for cell in header):
        raise UserInputError(
            f"the file is empty or has no header; expected a header with the columns {either(id_wanted)} and "
            f"{either(text_wanted)}",
            file=source,
            row=0,
        )
    id_index = header_column(header, id_wanted, source, ID_OPTION)
    text_index = header_column(header, text_wanted, source, TEXT_OPTION)
    names = (header[id_index], header[text_index])
    rows: list[CandidateRow] = []
    ignored: list[str] = []
    number = 0
    while True:
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            raise UserInputError(f"not valid CSV: {error}", file=source, row=number + 1) from None
        number += 1
        if not any(cell.strip() for cell in record):
            ignored.append(f"{location(source, number)} (blank)")
            continue
        if len(record) > len(header):
            problem = (WHOLE_ROW, f"{len(record)} fields but the header has {len(header)} (unquoted comma?)")
            rows.append(candidate_row(source, number, names, None, None, problem=problem))
            continue
        cells = record + [""] * (len(header) - len(record))
        others = {name: cells[i] for i, name in enumerate(header) if i not in (id_index, text_index) and name}
        rows.append(candidate_row(source, number, names, cells[id_index], cells[text_index], columns=others))
    return rows, ignored, NoteColumns(*names, found_options(id_field, text_field))


def jsonl_rows(
    text: str, source: str, id_field: str | None, text_field: str | None
) -> tuple[list[CandidateRow], list[str], NoteColumns]:
    """Candidate rows of a JSONL file: one JSON object per line, with the id and text fields, and those fields."""
    parsed: list[tuple[int, object]] = []
    ignored: list[str] = []
    for number, line in enumerate(_lines(text), start=1):
        if not line.strip():
            ignored.append(f"{location(source, number)} (blank)")
            continue
        try:
            parsed.append((number, json.loads(line)))
        except json.JSONDecodeError as error:
            parsed.append((number, error))
    keys = {key for _, record in parsed if isinstance(record, dict) for key in record}
    names = (first_held(wanted(id_field, ID_COLUMNS), keys), first_held(wanted(text_field, TEXT_COLUMNS), keys))
    rows = [_jsonlcandidate_row(source, number, record, names) for number, record in parsed]
    return rows, ignored, NoteColumns(*names, found_options(id_field, text_field), unit="field")


def _jsonlcandidate_row(source: str, number: int, record: object, names: tuple[str, str]) -> CandidateRow:
    """The candidate row of one parsed JSONL line (or of the error that parsing it raised)."""
    id_field, text_field = names
    if isinstance(record, json.JSONDecodeError):
        return candidate_row(source, number, names, None, None, problem=(WHOLE_LINE, f"not JSON: {record.msg}"))
    if not isinstance(record, dict):
        problem = (WHOLE_LINE, f"a JSON {type(record).__name__}, expected an object with {id_field!r}")
        return candidate_row(source, number, names, None, None, problem=problem)
    problem = _json_value_problem(record, id_field, allow_int=True) or _json_value_problem(record, text_field)
    others = {key: value for key, value in record.items() if isinstance(value, str) and key not in names}
    raw_id = record.get(id_field)
    note_id = str(raw_id) if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) else None
    note_text = record.get(text_field) if isinstance(record.get(text_field), str) else None
    return candidate_row(source, number, names, note_id, note_text, columns=others, problem=problem)


def _json_value_problem(record: dict, name: str, allow_int: bool = False) -> tuple[str, str] | None:
    """(field, reason) when a JSON field is missing or of the wrong type; None otherwise (emptiness is checked later)."""
    if name not in record or record[name] is None:
        return name, f"the field is missing (the line has: {', '.join(record) or 'no fields'})"
    value = record[name]
    if isinstance(value, str) or (allow_int and isinstance(value, int) and not isinstance(value, bool)):
        return None
    kinds = "a string or an integer" if allow_int else "a string"
    return name, f"expected {kinds}, found a JSON {type(value).__name__}"


def _lines(text: str) -> Iterator[str]:
    """Physical lines (LF, CRLF or CR), so that line numbers match what an editor shows."""
    yield from normalise_newlines(text).split("\n")[: -1 if text.endswith(("\n", "\r")) else None]


def folder_rows(folder: Path, encoding: str) -> tuple[list[CandidateRow], list[str]]:
    """Candidate rows of a folder: each `.txt` file (sorted by name) is a note whose id is the file's stem."""
    prefix = folder.name or str(folder)
    names = (FILE_NAME, FILE_TEXT)
    rows: list[CandidateRow] = []
    ignored: list[str] = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        label = f"{prefix}/{entry.name}"
        if entry.is_dir():
            ignored.append(f"{label} (a folder; only .txt files directly inside are read)")
        elif entry.suffix.lower() != TXT_SUFFIX:
            ignored.append(f"{label} (not a .txt file)")
        else:
            text = decode_bytes(entry.read_bytes(), encoding, str(entry))
            if not text.strip():
                rows.append(
                    candidate_row(label, None, names, entry.stem, None, problem=(FILE_TEXT, "the file is empty"))
                )
            else:
                rows.append(candidate_row(label, None, names, entry.stem, text))
    if not rows:
        found = f"; found only: {', '.join(ignored)}" if ignored else " (the folder is empty)"
        raise UserInputError(f"no .txt files in the folder{found}", file=str(folder), field="--input")
    return rows, ignored


def open_text(path: Path, encoding: str) -> TextIO:
    """The file for reading as text (newline="", for csv); undecodable bytes become lone surrogates, as in `_decode`."""
    try:
        return path.open(encoding=encoding, errors="surrogateescape", newline="")
    except LookupError:
        raise UserInputError(f"unknown encoding {encoding!r}", file=str(path), field="--encoding") from None


def without_bom(lines: Iterable[str]) -> Iterator[str]:
    """The lines, the first without a leading byte-order mark."""
    lines = iter(lines)
    first = next(lines, None)
    if first is not None:
        yield first.removeprefix("\ufeff")
        yield from lines


def decode_bytes(data: bytes, encoding: str, name: str) -> str:
    """Text of a file; undecodable bytes become lone surrogates so the row holding them can be named."""
    try:
        return data.decode(encoding, errors="surrogateescape").removeprefix("\ufeff")
    except LookupError:
        raise UserInputError(f"unknown encoding {encoding!r}", file=name, field="--encoding") from None


def location(file: str, row: int | None) -> str:
    """`notes.csv row 3`, `notes.jsonl line 7` or `dir/a.txt`."""
    return file if row is None else f"{file} {_row_unit(file)} {row}"


@functools.cache
def _row_unit(file: str) -> str:
    """What a file's rows are called: `line` in JSONL, `row` in a CSV (asked once per file, not once per row)."""
    return "line" if Path(file).suffix.lower() in JSONL_SUFFIXES else "row"
