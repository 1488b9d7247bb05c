"""The complete lines appended to a file since the last read: how the console follows the run's log and metrics."""

from __future__ import annotations

import threading
from collections.abc import Callable
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


class PollingThread:
    """Calls `poll` every `poll_s` seconds on a daemon thread, until stopped or until `done()` is true."""

    def __init__(
        self, poll: Callable[[], None], poll_s: float, name: str, done: Callable[[], bool] = lambda: False
    ) -> None:
        self._poll, self._poll_s, self._done = poll, poll_s, done
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        """Begin polling."""
        self._thread.start()

    def stop(self) -> None:
        """Stop polling and wait (at most 10 s) for the thread's last poll to end."""
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._done() and not self._stop.wait(self._poll_s):
            self._poll()
