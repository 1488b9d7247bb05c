"""The complete lines appended to a file since the last read: how the console follows the run's log and metrics."""

from __future__ import annotations

from pathlib import Path


class AppendedLines:
    """Reads a growing file from where the last read stopped; a line still being written waits for the next read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def skip_existing(self) -> None:
        """Start after what the file holds now (a resumed run's earlier lines are not new)."""
        self.offset = self.path.stat().st_size if self.path.is_file() else 0

    def read(self) -> list[str]:
        """The complete lines appended since the last read (none while the file does not exist)."""
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except FileNotFoundError:
            return []
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        return complete.decode("utf-8", errors="replace").splitlines()
