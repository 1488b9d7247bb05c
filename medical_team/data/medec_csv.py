"""How `load_medec` reads a MEDEC CSV: the file's bytes decoded, then its records parsed once.

Undecodable bytes and a broken CSV structure (a row longer than the header, a quote never closed) are
`UserInputError`s naming the file, the row (data rows from 1, the header is row 0) and the column. Columns
get the names pandas would give them, the names `LoadResult.ignored_columns` reports.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from medical_team.common.errors import UserInputError

_SURROGATE = re.compile("[\udc80-\udcff]")


def decode_file(path: Path, name: str, encoding: str) -> str:
    """The file's text, BOM dropped; undecodable bytes become lone surrogates, to be located once parsed."""
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


@dataclass(frozen=True)
class CsvTable:
    """The CSV, read once: the column names pandas would give its header, and its data records."""

    names: list[str]  # the column names as pandas gives them (blank -> "Unnamed: i", repeated -> "name.1")
    records: list[list[str]]  # data rows as read: a blank line is [], a short row has fewer fields
    index_fields: int = 0  # leading fields of every record holding an index with no header cell


def parse_csv(text: str, name: str) -> CsvTable:
    """Read the CSV's records once; raise `UserInputError` for an undecodable byte or a broken CSV structure."""
    ended: list[bool] = []

    def lines() -> Iterator[str]:
        yield from io.StringIO(text, newline="")
        ended.append(True)

    records: list[list[str]] = []
    unclosed = False
    problem: csv.Error | None = None
    try:
        for record in csv.reader(lines()):
            # The reader finished this record only because the text ended: a double-quoted value never closed.
            unclosed = bool(ended)
            records.append(record)
    except csv.Error as error:
        problem = error
    undecodable = _find_undecodable(text, records, name)
    if undecodable:
        raise undecodable
    if problem is not None:
        raise UserInputError(f"not a valid CSV file: {problem}", file=name, row=len(records), field="CSV structure")
    header, body = records[0], records[1:]
    if unclosed:
        last = len(records[-1]) - 1
        column = header[last] if body and 0 <= last < len(header) else f"column {last + 1}"
        raise UserInputError(
            'a double-quoted value starts in this row and is never closed (unbalanced ")',
            file=name,
            row=len(body),
            field=column,
        )
    # Like pandas, a first row longer than the header (and no row longer than it) starts with an unnamed index.
    index_fields = len(body[0]) - len(header) if body else 0
    if index_fields <= 0 or any(len(fields) > len(body[0]) for fields in body):
        index_fields = 0
        for row, fields in enumerate(body, start=1):
            if len(fields) > len(header):
                raise UserInputError(
                    f"the row has {len(fields)} fields but the header has {len(header)} columns",
                    file=name,
                    row=row,
                    field=f"column {len(header) + 1}",
                )
    return CsvTable(_pandas_names(header), body, index_fields)


def _pandas_names(header: list[str]) -> list[str]:
    """The column names pandas gives a header: `Unnamed: i` for a blank one, `.1`, `.2`... on a repeated one."""
    names = [cell or f"Unnamed: {position}" for position, cell in enumerate(header)]
    counts: Counter[str] = Counter()
    for position in sorted(range(len(names)), key=lambda position: not header[position]):  # blank ones last
        column = written = names[position]
        count = counts[written]
        while count > 0:  # the next free `written.k`, skipping names the header already has
            counts[written] = count + 1
            column = f"{written}.{count}"
            count = count + 1 if column in names else counts[column]
        names[position] = column
        counts[column] = count + 1
    return names


def _find_undecodable(text: str, records: list[list[str]], name: str) -> UserInputError | None:
    """An error for the first cell holding a byte the encoding could not decode (a lone surrogate), if any."""
    found = _SURROGATE.search(text)
    if not found:
        return None
    header = records[0] if records else []
    for row, fields in enumerate(records if "\x00" not in text else []):
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
    # Not even CSV-shaped (binary data): fall back to the physical line and the commas before the byte.
    before = text[: found.start()]
    line = before.count("\n") + 1
    return UserInputError(
        f"undecodable byte on line {line}; this does not look like a UTF-8 CSV file",
        file=name,
        row=line - 1,
        field=f"column {before.rsplit(chr(10), 1)[-1].count(',') + 1}",
    )
