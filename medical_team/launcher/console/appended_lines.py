"""The complete lines appended to a file since the last read: how the console follows the run's log and metrics."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Self


class AppendedLines:
    """Reads a growing file from where the last read stopped; a line still being written waits for the next read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.newlines = 0  # newlines before `offset`: the next line read is line `newlines + 1` of the file

    def skip_existing(self) -> None:
        """Start after what the file holds now (a resumed run's earlier lines are not new)."""
        existing = self.path.read_bytes() if self.path.is_file() else b""
        self.offset, self.newlines = len(existing), existing.count(b"\n")

    def read(self) -> list[str]:
        """The complete lines appended since the last read (none while the file does not exist)."""
        return self._complete().decode("utf-8", errors="replace").splitlines()

    def read_numbered(self) -> list[tuple[int, str]]:
        """The complete lines appended since the last read, each with its line number in the file (split at newlines only)."""
        first = self.newlines + 1
        lines = self._complete().decode("utf-8", errors="replace").split("\n")[:-1]
        return list(enumerate(lines, start=first))

    def _complete(self) -> bytes:
        """The bytes appended since the last read, up to the last newline (none while the file does not exist)."""
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except FileNotFoundError:
            return b""
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        self.newlines += complete.count(b"\n")
        return complete


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


class FileFollower:
    """Context manager: while active, a daemon thread calls `poll` (a subclass's) every `poll_s` seconds.

    `self._lines` holds what was appended to `path` since the block began (earlier lines are not new).
    """

    def __init__(self, path: Path, poll_s: float, name: str, done: Callable[[], bool] = lambda: False) -> None:
        self._lines = AppendedLines(path)
        self._poller = PollingThread(self.poll, poll_s, name, done)

    def __enter__(self) -> Self:
        self._lines.skip_existing()
        self._poller.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._poller.stop()

    def poll(self) -> None:
        """Act on the lines appended since the last poll."""
        raise NotImplementedError
