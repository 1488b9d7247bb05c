"""User-facing errors: what went wrong, where (file, row, field), and how to fix it."""

from __future__ import annotations


class UserInputError(Exception):
    """Bad input from a user (a file, a request, a config value); the CLI prints it on one line and exits 2."""

    def __init__(self, message: str, *, file: str | None = None, row: int | None = None, field: str | None = None):
        self.message = message
        self.file = file
        self.row = row
        self.field = field
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """`file:row: field 'x': message` with only the parts that are known."""
        where = ":".join(str(p) for p in (self.file, f"row {self.row}" if self.row is not None else None) if p)
        field = f"field '{self.field}': " if self.field else ""
        return f"{where}: {field}{self.message}" if where else f"{field}{self.message}"
