"""Games waiting on the judge, on the console: the agent-loop workers' half (the launcher relays the lines).

A judge call runs on an agent-loop worker's thread (`judge_factory.judge_executor`), inside a Ray actor
whose output reaches only the run's log (Ray forwards it to the launcher, whose output is the log). While
any call of a worker has waited `every_s` or more, the worker prints a WAIT_MARK line every `every_s`,
and an OVER line once those calls ended (medical_team/run/judge_wait_lines.py); the launcher's `JudgeWaitRelay`
(medical_team/launcher/console/judge_wait_relay.py) follows the run log and says those lines on the console.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from medical_team.run.judge_wait_lines import OVER, WAIT_MARK

REPORT_EVERY_S = 30.0


class JudgeWaits:
    """The judge calls in flight in this process; says (stdout) when some have waited `every_s` or longer."""

    def __init__(self, where: str, every_s: float = REPORT_EVERY_S) -> None:
        self.where = where
        self.every_s = every_s
        self._started: dict[int, float] = {}
        self._tokens = itertools.count()
        self._lock = threading.Lock()
        self._reported = False  # a wait line went out and no OVER line since
        self._thread: threading.Thread | None = None

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """Count the block as one game waiting on the judge."""
        token = next(self._tokens)
        with self._lock:
            self._started[token] = time.monotonic()
            if self._thread is None:
                self._thread = threading.Thread(target=self._report, name="medplay-judge-waits", daemon=True)
                self._thread.start()
        try:
            yield
        finally:
            with self._lock:
                self._started.pop(token, None)

    def line(self) -> str | None:
        """The line to say now: the long waits, OVER when they ended since the last wait line, else None."""
        now = time.monotonic()
        with self._lock:
            waits = [now - started for started in self._started.values() if now - started >= self.every_s]
            if waits:
                self._reported = True
                return (
                    f"{WAIT_MARK} {len(waits)} game(s) waiting for the judge at {self.where}, "
                    f"the longest for {max(waits):.0f} s"
                )
            if self._reported:
                self._reported = False
                return f"{WAIT_MARK} {OVER}: the judge at {self.where} answered the games that waited"
        return None

    def _report(self) -> None:
        while True:
            time.sleep(self.every_s)
            line = self.line()
            if line is not None:
                print(line, flush=True)
