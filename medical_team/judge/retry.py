"""Retries with exponential backoff for HTTP calls to judge backends and servers (tenacity).

A server that answers 429 is overloaded, not failing: such answers do not use up the policy's tries; the call waits
for it (with jittered backoff, so the callers it refused do not come back together) until `overload_s` have passed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import httpx
from tenacity import (
    RetryCallState,
    RetryError,
    Retrying,
    retry_if_exception,
    wait_exponential,
    wait_random_exponential,
)

OVERLOADED = 429  # the status of a server with too many requests in flight (the judge server's --max-concurrent)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry a failed HTTP call (exponential backoff between tries)."""

    attempts: int = 4  # failed tries in all, the first included; 429 answers are not counted
    initial_backoff_s: float = 0.5
    max_backoff_s: float = 8.0

    def retrying(
        self, *, overload_s: float = 300.0, on_retry: Callable[[BaseException], None] | None = None
    ) -> Retrying:
        """A tenacity `Retrying` for one call: transient failures retried under this policy, 429 answers until
        `overload_s` seconds after the first try; `on_retry` sees the error of each try that is retried."""
        backoff = {"multiplier": self.initial_backoff_s, "max": self.max_backoff_s}
        steady, jittered = wait_exponential(**backoff), wait_random_exponential(**backoff)
        return Retrying(
            stop=_GiveUp(self.attempts, overload_s),
            wait=lambda state: (jittered if is_overloaded(_error_of(state)) else steady)(state),
            retry=retry_if_exception(is_transient),
            before_sleep=None if on_retry is None else lambda state: on_retry(_error_of(state)),
        )


class _GiveUp:
    """Tenacity's stop condition of one call: `attempts` tries failed other than by a 429, or `overload_s` seconds
    of 429 answers since the first try."""

    def __init__(self, attempts: int, overload_s: float) -> None:
        self.attempts = attempts
        self.overload_s = overload_s
        self.failures = 0  # tenacity asks once per failed try

    def __call__(self, state: RetryCallState) -> bool:
        if is_overloaded(_error_of(state)):
            return state.seconds_since_start >= self.overload_s
        self.failures += 1
        return self.failures >= self.attempts


def _error_of(state: RetryCallState) -> BaseException | None:
    return None if state.outcome is None else state.outcome.exception()


def is_overloaded(error: BaseException | None) -> bool:
    """True for a 429 answer: the server had too many requests in flight."""
    return isinstance(error, httpx.HTTPStatusError) and error.response.status_code == OVERLOADED


def is_transient(error: BaseException) -> bool:
    """Worth retrying: the server could not be reached, timed out, was overloaded or failed (5xx, 408, 429)."""
    if isinstance(error, httpx.TransportError):
        return True
    if isinstance(error, httpx.HTTPStatusError):
        status = error.response.status_code
        return status >= 500 or status in (408, OVERLOADED)
    return False


def describe_http_error(error: BaseException) -> str:
    """A one-line reason for a failed call, without the request body."""
    if isinstance(error, RetryError):
        error = error.last_attempt.exception() or error
    if isinstance(error, httpx.HTTPStatusError):
        return f"HTTP {error.response.status_code}: {error.response.text[:200]}"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
