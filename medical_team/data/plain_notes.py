"""The reader of plain notes (no gold labels): a CSV, a JSONL file or a folder of `.txt` files -> `PlainNote`s.

Used by `medplay predict` and `medplay convert --notes`. Without a column named, a file's id and text are its first
column (CSV) or field (JSONL) of `ID_COLUMNS` and `TEXT_COLUMNS` (`note_id`/`note`, else `id`/`text`), and
`PlainNotes.columns` says which were found. Rows are numbered as in `medical_team.data.medec`: CSV data rows
from 1 (the header is row 0), JSONL lines from 1; a `.txt` file has no row. Every note that is not read is named in
`PlainNotes.skipped` (on_bad_row="skip") or in the raised error (on_bad_row="refuse"); lines and files that hold no
note at all (blank lines, non-.txt files) are named in `PlainNotes.ignored`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from medical_team.common.errors import UserInputError
from medical_team.data.plain_columns import NoteColumns
from medical_team.data.plain_formats import (
    CSV_SUFFIXES,
    JSONL_SUFFIXES,
    CandidateRow,
    csv_rows,
    decode_bytes,
    folder_rows,
    jsonl_rows,
    location,
    open_text,
    without_bom,
)

OnBadRow = Literal["skip", "refuse"]
ON_BAD_ROW_CHOICES: tuple[str, ...] = ("refuse", "skip")  # the first is the default

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
        return f"{location(self.file, self.row)}, field {self.field!r}: {self.reason}"


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
        rows, ignored = folder_rows(path, encoding)
    else:
        source = path.name
        suffix = path.suffix.lower()
        if suffix in CSV_SUFFIXES:
            # Read line by line: decoding the whole file first held it two and a half times over (bytes, text, and
            # csv's StringIO buffer at four bytes a character), a peak of ~9 times the file's size.
            with open_text(path, encoding) as handle:
                rows, ignored, columns = csv_rows(without_bom(handle), source, id_field, text_field)
        elif suffix in JSONL_SUFFIXES:
            text = decode_bytes(path.read_bytes(), encoding, str(path))
            rows, ignored, columns = jsonl_rows(text, source, id_field, text_field)
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


def _check_rows(rows: list[CandidateRow]) -> tuple[list[PlainNote], list[BadRow]]:
    """Validate rows in order: the first problem of each row makes it a bad row; the second use of an id is bad."""
    notes: list[PlainNote] = []
    bad: list[BadRow] = []
    first_seen: dict[str, str] = {}
    for row in rows:
        problem = row.problem or _problem(row, first_seen)
        if problem:
            bad.append(BadRow(row.file, row.row, *problem))
            continue
        where = location(row.file, row.row)
        first_seen[str(row.note_id)] = where
        notes.append(PlainNote(str(row.note_id), str(row.text), where, MappingProxyType(dict(row.columns))))
    return notes, bad


def _problem(row: CandidateRow, first_seen: dict[str, str]) -> tuple[str, str] | None:
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
