"""Stop training on ties forever: count consecutive failed judge batches and give up at a limit."""

from __future__ import annotations

import threading


class JudgeUnavailableError(RuntimeError):
    """The judge failed too many batches in a row; the run must stop rather than train on ties."""


class ConsecutiveFailures:
    """Counts failed batches in a row; `failure()` raises `JudgeUnavailableError` once `limit` is reached.

    `limit=None` never raises (every failed batch just becomes ties).
    """

    def __init__(self, where: str, limit: int | None) -> None:
        if limit is not None and limit < 1:
            raise ValueError(f"consecutive failure limit must be >= 1 or None, got {limit}")
        self.where = where
        self.limit = limit
        self.count = 0
        self._lock = threading.Lock()

    def success(self) -> None:
        """A batch got real verdicts: the streak is over."""
        with self._lock:
            self.count = 0

    def failure(self, reason: str) -> None:
        """A batch failed; raise when this makes `limit` failures in a row."""
        with self._lock:
            self.count += 1
            count = self.count
        if self.limit is not None and count >= self.limit:
            raise JudgeUnavailableError(f"judge at {self.where} failed {count} consecutive batches: {reason}")
