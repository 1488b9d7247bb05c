"""Which columns of a plain-notes file hold the ids and the texts: the ones the options name, else the common names.

`medplay predict` and `medplay convert --notes` without `--id-column`/`--text-column` read a CSV's (or a JSONL
file's) first column (field) of ID_COLUMNS and of TEXT_COLUMNS, and say which on the console (`found_line`).
"""

from __future__ import annotations

from dataclasses import dataclass

from medical_team.common.errors import UserInputError

# The names a file's id and text are looked for under when no option names them, in this order: medplay's own,
# then the names most exported datasets use.
ID_COLUMNS: tuple[str, ...] = ("note_id", "id")
TEXT_COLUMNS: tuple[str, ...] = ("note", "text")
ID_OPTION, TEXT_OPTION = "--id-column", "--text-column"


@dataclass(frozen=True)
class NoteColumns:
    """The CSV columns or JSONL fields a file's ids and texts were read from, and the options that did not name them."""

    id: str
    text: str
    found: tuple[str, ...] = ()  # ID_OPTION, TEXT_OPTION: the column was looked for, not named by its option
    unit: str = "column"  # "column" (CSV) or "field" (JSONL), for the console line

    def found_line(self, source: str) -> str | None:
        """One console line: the columns found in `source` and the options that choose others (None: all named)."""
        parts = [
            f"{what} from {self.unit} {name!r}"
            for option, what, name in ((ID_OPTION, "ids", self.id), (TEXT_OPTION, "texts", self.text))
            if option in self.found
        ]
        if not parts:
            return None
        choose = f"{self.found[0]} names another" if len(self.found) == 1 else f"{' and '.join(self.found)} name others"
        return f"{source}: {', '.join(parts)} (found in the file; {choose})"


def wanted(named: str | None, common: tuple[str, ...]) -> tuple[str, ...]:
    """The names a column is looked for under: the one its option named, else the common ones in order."""
    return common if named is None else (named,)


def found_options(id_field: str | None, text_field: str | None) -> tuple[str, ...]:
    """The options that named no column: their columns were looked for under the common names."""
    return tuple(option for option, named in ((ID_OPTION, id_field), (TEXT_OPTION, text_field)) if named is None)


def header_column(header: list[str], names: tuple[str, ...], source: str, option: str) -> int:
    """Position of the first of `names` the CSV header holds: exact name first, else the one equal ignoring case and
    outer spaces. None of them: refused, naming the header found and the option that names a column."""
    found = ", ".join(repr(name) for name in header)
    for name in names:
        if header.count(name) == 1:
            return header.index(name)
        loose = [i for i, column in enumerate(header) if column.strip().casefold() == name.strip().casefold()]
        if len(loose) == 1:
            return loose[0]
        if loose:
            raise UserInputError(f"column {name!r} appears more than once in the header ({found})", file=source, row=0)
    which = f"column {names[0]!r} is" if len(names) == 1 else f"neither column {either(names, 'nor')} is"
    raise UserInputError(
        f"{which} in the header (found: {found}); name the column with {option}",
        file=source,
        row=0,
        field=names[0],
    )


def first_held(names: tuple[str, ...], keys: set[str]) -> str:
    """The first of `names` some JSONL line holds; the first when none does (each line then names it missing)."""
    return next((name for name in names if name in keys), names[0])


def either(names: tuple[str, ...], word: str = "or") -> str:
    """`'note_id' or 'id'`."""
    return f" {word} ".join(repr(name) for name in names)
