"""Running counters of a judge (calls, parse errors, ties, latency) in the names the game metrics use."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from medical_team.game.judging import JudgeVerdict


@dataclass
class JudgeCounters:
    """Thread-safe totals over every `judge()` call of one judge; `metrics()` gives the `judge/*` names."""

    calls: int = 0  # games judged
    model_calls: int = 0  # games that needed the model (not settled by a rule)
    rule_decisions: int = 0
    parse_errors: int = 0
    ties: int = 0
    failed_batches: int = 0  # batches lost to an unreachable backend or server
    batches: int = 0
    latency_s: float = 0.0  # summed wall time of judge() calls
    retries: int = 0  # tries of a batch that failed and were tried again (http)
    overloaded: int = 0  # of those, the ones the server answered 429: too many requests in flight
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, verdicts: Sequence[JudgeVerdict], latency_s: float, *, model_calls: int = 0) -> None:
        """Add one judged batch."""
        with self._lock:
            self.batches += 1
            self.calls += len(verdicts)
            self.model_calls += model_calls
            self.rule_decisions += sum(v.reason.startswith("rule:") for v in verdicts)
            self.parse_errors += sum(v.parse_error for v in verdicts)
            self.ties += sum(v.tie for v in verdicts)
            self.latency_s += latency_s

    def record_failed_batch(self) -> None:
        """Count a batch whose verdicts are ties because the backend could not be reached."""
        with self._lock:
            self.failed_batches += 1

    def record_retry(self, *, overloaded: bool) -> None:
        """Count a try that failed and is tried again (`overloaded`: the server answered 429)."""
        with self._lock:
            self.retries += 1
            self.overloaded += overloaded

    def metrics(self) -> dict[str, float]:
        """`judge/calls`, `judge/parse_error_rate`, `judge/latency_s` (mean per batch) and extra counters."""
        with self._lock:
            return {
                "judge/calls": float(self.calls),
                "judge/parse_error_rate": self.parse_errors / self.calls if self.calls else 0.0,
                "judge/latency_s": self.latency_s / self.batches if self.batches else 0.0,
                "judge/tie_rate": self.ties / self.calls if self.calls else 0.0,
                "judge/ties": float(self.ties),
                "judge/failed_batches": float(self.failed_batches),
                "judge/retries": float(self.retries),
                "judge/overloaded": float(self.overloaded),
            }
