"""Retries with exponential backoff for HTTP calls to judge backends and servers (tenacity)."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from tenacity import RetryError, Retrying, retry_if_exception, stop_after_attempt, wait_exponential


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry a failed HTTP call (exponential backoff between tries)."""

    attempts: int = 4  # total tries, the first included
    initial_backoff_s: float = 0.5
    max_backoff_s: float = 8.0

    def retrying(self) -> Retrying:
        """A tenacity `Retrying` that retries transient HTTP failures under this policy."""
        return Retrying(
            stop=stop_after_attempt(self.attempts),
            wait=wait_exponential(multiplier=self.initial_backoff_s, max=self.max_backoff_s),
            retry=retry_if_exception(is_transient),
        )


def is_transient(error: BaseException) -> bool:
    """Worth retrying: the server could not be reached, timed out, was overloaded or failed (5xx, 408, 429)."""
    if isinstance(error, httpx.TransportError):
        return True
    if isinstance(error, httpx.HTTPStatusError):
        status = error.response.status_code
        return status >= 500 or status in (408, 429)
    return False


def describe_http_error(error: BaseException) -> str:
    """A one-line reason for a failed call, without the request body."""
    if isinstance(error, RetryError):
        error = error.last_attempt.exception() or error
    if isinstance(error, httpx.HTTPStatusError):
        return f"HTTP {error.response.status_code}: {error.response.text[:200]}"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
