"""The reader of plain notes (no gold labels): a CSV, a JSONL file or a folder of `.txt` files -> `PlainNote`s.

Used by `medplay predict` and `medplay convert --notes`. Without a column named, a file's id and text are its first
column (CSV) or field (JSONL) of `ID_COLUMNS` and `TEXT_COLUMNS` (`note_id`/`note`, else `id`/`text`), and
`PlainNotes.columns` says which were found. Rows are numbered as in `medical_team.data.medec`: CSV data rows
from 1 (the header is row 0), JSONL lines from 1; a `.txt` file has no row. Every note that is not read is named in
`PlainNotes.skipped` (on_bad_row="skip") or in the raised error (on_bad_row="refuse"); lines and files that hold no
note at all (blank lines, non-.txt files) are named in `PlainNotes.ignored`.
"""

from __future__ import annotations

import csv
import functools
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal, TextIO

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
from medical_team.errors import UserInputError

OnBadRow = Literal["skip", "refuse"]
ON_BAD_ROW_CHOICES: tuple[str, ...] = ("refuse", "skip")  # the first is the default

CSV_SUFFIXES = frozenset({".csv"})
JSONL_SUFFIXES = frozenset({".jsonl", ".ndjson"})
TXT_SUFFIX = ".txt"

# The field a BadRow names when the problem is the whole JSONL line or the whole CSV record, not one value.
WHOLE_LINE = "(whole line)"
WHOLE_ROW = "(whole row)"
# The fields a BadRow names for a .txt file (the file's name is the note id, its contents the note text).
FILE_NAME = "(file name)"
FILE_TEXT = "(file text)"

_SURROGATE = re.compile("[\udc80-\udcff]")


@dataclass(frozen=True)
class PlainNote:
    """One note to assess: its id, its text and where it came from."""

    note_id: str
    text: str
    location: str  # for messages: "notes.csv row 3", "notes.jsonl line 7", "dir/a.txt"
    columns: Mapping[str, str] = field(default_factory=dict)  # the row's other columns / JSON string fields


@dataclass(frozen=True)
class BadRow:
    """A row (or .txt file) that holds no usable note, and why."""

    file: str
    row: int | None  # CSV data row / JSONL line (from 1); None for a .txt file
    field: str
    reason: str

    def describe(self) -> str:
        """`notes.csv row 3, field 'note': the text is empty` (one line)."""
        return f"{_location(self.file, self.row)}, field {self.field!r}: {self.reason}"


@dataclass(frozen=True)
class PlainNotes:
    """What `read_plain_notes` read: the notes in input order, the bad rows it left out, what it ignored."""

    notes: tuple[PlainNote, ...]
    skipped: tuple[BadRow, ...]
    ignored: tuple[str, ...] = ()  # blank lines, non-.txt files, sub-folders: held no note, named for the record
    columns: NoteColumns | None = None  # a CSV's or a JSONL file's; None for a folder of .txt files


class BadRowsError(UserInputError):
    """`read_plain_notes` refused its input: every bad row is listed in the message and in `bad_rows`."""

    def __init__(self, bad_rows: tuple[BadRow, ...], source: str):
        self.bad_rows = bad_rows
        lines = "\n".join(f"  {bad.describe()}" for bad in bad_rows)
        noun = "bad row" if len(bad_rows) == 1 else "bad rows"
        message = (
            f"{len(bad_rows)} {noun}; fix them, or skip them (--on-bad-row skip) and they are listed in the summary:"
            f"\n{lines}"
        )
        only = bad_rows[0] if len(bad_rows) == 1 else None
        super().__init__(
            message,
            file=only.file if only else source,
            row=only.row if only else None,
            field=only.field if only else None,
        )


def read_plain_notes(
    path: Path,
    *,
    id_field: str | None = None,
    text_field: str | None = None,
    on_bad_row: OnBadRow = "refuse",
    encoding: str = "utf-8",
) -> PlainNotes:
    """Read notes from a CSV (`.csv`), a JSONL file (`.jsonl`/`.ndjson`) or a folder of `.txt` files (id = stem).

    A field given as None is the file's first column (field) of ID_COLUMNS / TEXT_COLUMNS; `columns` says which.

    Bad rows (empty text, missing id, a repeated id, undecodable bytes, a JSONL line that is not a JSON object) are
    returned in `skipped` (on_bad_row="skip") or raised all at once as `BadRowsError` (on_bad_row="refuse").
    Problems with the input as a whole (no such path, unknown format, missing column) raise `UserInputError`.
    """
    if on_bad_row not in ON_BAD_ROW_CHOICES:
        raise UserInputError(
            f"must be one of {', '.join(ON_BAD_ROW_CHOICES)}, found {on_bad_row!r}", field="--on-bad-row"
        )
    path = Path(path)
    columns = None
    if not path.exists():
        raise UserInputError("no such file or folder", file=str(path), field="--input")
    if path.is_dir():
        source = path.name or str(path)
        rows, ignored = _folder_rows(path, encoding)
    else:
        source = path.name
        suffix = path.suffix.lower()
        if suffix in CSV_SUFFIXES:
            # Read line by line: decoding the whole file first held it two and a half times over (bytes, text, and
            # csv's StringIO buffer at four bytes a character), a peak of ~9 times the file's size.
            with _open_text(path, encoding) as handle:
                rows, ignored, columns = _csv_rows(_without_bom(handle), source, id_field, text_field)
        elif suffix in JSONL_SUFFIXES:
            text = _decode(path.read_bytes(), encoding, str(path))
            rows, ignored, columns = _jsonl_rows(text, source, id_field, text_field)
        else:
            raise UserInputError(
                f"unknown format {path.suffix or '(no suffix)'!r}: expected a .csv file, a .jsonl file "
                "or a folder of .txt files",
                file=str(path),
                field="--input",
            )
    notes, bad = _check_rows(rows)
    if bad and on_bad_row == "refuse":
        raise BadRowsError(tuple(bad), source)
    if not notes:
        if bad:
            raise BadRowsError(tuple(bad), source)
        raise UserInputError("no notes found", file=source, field="--input")
    return PlainNotes(tuple(notes), tuple(bad), tuple(ignored), columns)


@dataclass(frozen=True)
class _Row:
    """One candidate note before validation; `problem` is set when it is unreadable as a whole."""

    file: str
    row: int | None
    names: tuple[str, str]  # the id field's and the text field's names, for BadRow.field
    note_id: str | None
    text: str | None
    columns: dict[str, str]
    problem: tuple[str, str] | None = None  # (field, reason)


def _check_rows(rows: list[_Row]) -> tuple[list[PlainNote], list[BadRow]]:
    """Validate rows in order: the first problem of each row makes it a bad row; the second use of an id is bad."""
    notes: list[PlainNote] = []
    bad: list[BadRow] = []
    first_seen: dict[str, str] = {}
    for row in rows:
        problem = row.problem or _problem(row, first_seen)
        if problem:
            bad.append(BadRow(row.file, row.row, *problem))
            continue
        location = _location(row.file, row.row)
        first_seen[str(row.note_id)] = location
        notes.append(PlainNote(str(row.note_id), str(row.text), location, MappingProxyType(dict(row.columns))))
    return notes, bad


def _problem(row: _Row, first_seen: dict[str, str]) -> tuple[str, str] | None:
    """(field, reason) for the first thing wrong with the row's id, text or other columns; None when it is fine."""
    id_name, text_name = row.names
    for name, value in ((id_name, row.note_id), (text_name, row.text), *row.columns.items()):
        if value is not None and _SURROGATE.search(value):
            byte = ord(_SURROGATE.search(value).group()) - 0xDC00
            return name, f"byte 0x{byte:02x} cannot be decoded; save the file as UTF-8 or pass --encoding"
    if row.note_id is None or not row.note_id.strip():
        return id_name, "the id is missing or empty"
    if row.text is None or not row.text.strip():
        return text_name, "the text is empty"
    if row.note_id in first_seen:
        return id_name, f"duplicate id {row.note_id!r} (first at {first_seen[row.note_id]})"
    return None


def _row(
    file: str,
    number: int | None,
    names: tuple[str, str],
    note_id: str | None,
    text: str | None,
    *,
    columns: Mapping[str, str] | None = None,
    problem: tuple[str, str] | None = None,
) -> _Row:
    """A candidate row: id stripped, text with LF line endings and no outer blank space."""
    note_id = note_id.strip() if note_id is not None else None
    text = normalise_newlines(text).strip() if text is not None else None
    return _Row(file, number, names, note_id, text, dict(columns or {}), problem)


def _csv_rows(
    lines: Iterable[str], source: str, id_field: str | None, text_field: str | None
) -> tuple[list[_Row], list[str], NoteColumns]:
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
    rows: list[_Row] = []
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
            ignored.append(f"{_location(source, number)} (blank)")
            continue
        if len(record) > len(header):
            problem = (WHOLE_ROW, f"{len(record)} fields but the header has {len(header)} (unquoted comma?)")
            rows.append(_row(source, number, names, None, None, problem=problem))
            continue
        cells = record + [""] * (len(header) - len(record))
        others = {name: cells[i] for i, name in enumerate(header) if i not in (id_index, text_index) and name}
        rows.append(_row(source, number, names, cells[id_index], cells[text_index], columns=others))
    return rows, ignored, NoteColumns(*names, found_options(id_field, text_field))


def _jsonl_rows(
    text: str, source: str, id_field: str | None, text_field: str | None
) -> tuple[list[_Row], list[str], NoteColumns]:
    """Candidate rows of a JSONL file: one JSON object per line, with the id and text fields, and those fields."""
    parsed: list[tuple[int, object]] = []
    ignored: list[str] = []
    for number, line in enumerate(_lines(text), start=1):
        if not line.strip():
            ignored.append(f"{_location(source, number)} (blank)")
            continue
        try:
            parsed.append((number, json.loads(line)))
        except json.JSONDecodeError as error:
            parsed.append((number, error))
    keys = {key for _, record in parsed if isinstance(record, dict) for key in record}
    names = (first_held(wanted(id_field, ID_COLUMNS), keys), first_held(wanted(text_field, TEXT_COLUMNS), keys))
    rows = [_jsonl_row(source, number, record, names) for number, record in parsed]
    return rows, ignored, NoteColumns(*names, found_options(id_field, text_field), unit="field")


def _jsonl_row(source: str, number: int, record: object, names: tuple[str, str]) -> _Row:
    """The candidate row of one parsed JSONL line (or of the error that parsing it raised)."""
    id_field, text_field = names
    if isinstance(record, json.JSONDecodeError):
        return _row(source, number, names, None, None, problem=(WHOLE_LINE, f"not JSON: {record.msg}"))
    if not isinstance(record, dict):
        problem = (WHOLE_LINE, f"a JSON {type(record).__name__}, expected an object with {id_field!r}")
        return _row(source, number, names, None, None, problem=problem)
    problem = _json_value_problem(record, id_field, allow_int=True) or _json_value_problem(record, text_field)
    others = {key: value for key, value in record.items() if isinstance(value, str) and key not in names}
    raw_id = record.get(id_field)
    note_id = str(raw_id) if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) else None
    note_text = record.get(text_field) if isinstance(record.get(text_field), str) else None
    return _row(source, number, names, note_id, note_text, columns=others, problem=problem)


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


def _folder_rows(folder: Path, encoding: str) -> tuple[list[_Row], list[str]]:
    """Candidate rows of a folder: each `.txt` file (sorted by name) is a note whose id is the file's stem."""
    prefix = folder.name or str(folder)
    names = (FILE_NAME, FILE_TEXT)
    rows: list[_Row] = []
    ignored: list[str] = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        label = f"{prefix}/{entry.name}"
        if entry.is_dir():
            ignored.append(f"{label} (a folder; only .txt files directly inside are read)")
        elif entry.suffix.lower() != TXT_SUFFIX:
            ignored.append(f"{label} (not a .txt file)")
        else:
            text = _decode(entry.read_bytes(), encoding, str(entry))
            if not text.strip():
                rows.append(_row(label, None, names, entry.stem, None, problem=(FILE_TEXT, "the file is empty")))
            else:
                rows.append(_row(label, None, names, entry.stem, text))
    if not rows:
        found = f"; found only: {', '.join(ignored)}" if ignored else " (the folder is empty)"
        raise UserInputError(f"no .txt files in the folder{found}", file=str(folder), field="--input")
    return rows, ignored


def _open_text(path: Path, encoding: str) -> TextIO:
    """The file for reading as text (newline="", for csv); undecodable bytes become lone surrogates, as in `_decode`."""
    try:
        return path.open(encoding=encoding, errors="surrogateescape", newline="")
    except LookupError:
        raise UserInputError(f"unknown encoding {encoding!r}", file=str(path), field="--encoding") from None


def _without_bom(lines: Iterable[str]) -> Iterator[str]:
    """The lines, the first without a leading byte-order mark."""
    lines = iter(lines)
    first = next(lines, None)
    if first is not None:
        yield first.removeprefix("\ufeff")
        yield from lines


def _decode(data: bytes, encoding: str, name: str) -> str:
    """Text of a file; undecodable bytes become lone surrogates so the row holding them can be named."""
    try:
        return data.decode(encoding, errors="surrogateescape").removeprefix("\ufeff")
    except LookupError:
        raise UserInputError(f"unknown encoding {encoding!r}", file=name, field="--encoding") from None


def _location(file: str, row: int | None) -> str:
    """`notes.csv row 3`, `notes.jsonl line 7` or `dir/a.txt`."""
    return file if row is None else f"{file} {_row_unit(file)} {row}"


@functools.cache
def _row_unit(file: str) -> str:
    """What a file's rows are called: `line` in JSONL, `row` in a CSV (asked once per file, not once per row)."""
    return "line" if Path(file).suffix.lower() in JSONL_SUFFIXES else "row"
