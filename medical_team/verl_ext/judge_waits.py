"""Games waiting on the judge, on the console: the agent-loop workers say them, the launcher relays them.

A judge call runs on an agent-loop worker's thread (`judge_factory.judge_executor`), inside a Ray actor
whose output reaches only the run's log (Ray forwards it to the launcher, whose output is the log). While
any call of a worker has waited `every_s` or more, the worker prints a WAIT_MARK line every `every_s`,
and an OVER line once those calls ended; the launcher's `JudgeWaitRelay` follows the run log and says
those lines on the console. Its `waiting()` tells the SIGTERM handler that a step cannot end soon
(reliability/graceful_stop.py).
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Self

from medical_team.console import say
from medical_team.verl_ext.appended_lines import AppendedLines, PollingThread

WAIT_MARK = "medplay: judge wait:"
OVER = "over"  # the text after WAIT_MARK once a worker's long waits ended
REPORT_EVERY_S = 30.0
# Ray's prefix of a forwarded line, "(AgentLoopWorker pid=123, ip=...) ": which worker said it.
_RAY_PREFIX = re.compile(r"\((?P<who>[^)]*)\)\s*$")


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


class JudgeWaitRelay:
    """Context manager: while active, a thread says on the console each judge-wait line the run log receives."""

    def __init__(self, log_file: Path, poll_s: float = 1.0) -> None:
        self._lines = AppendedLines(log_file)
        self._waiting: dict[str, str] = {}  # the last wait line of each worker whose waits are not over
        self._lock = threading.Lock()
        self._poller = PollingThread(self.poll, poll_s, "medplay-judge-waits")

    def __enter__(self) -> Self:
        self._lines.skip_existing()
        self._poller.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._poller.stop()

    def poll(self) -> None:
        """Say every wait line appended to the log since the last poll."""
        for line in self._lines.read():
            at = line.find(WAIT_MARK)
            if at < 0:
                continue
            prefix = _RAY_PREFIX.search(line[:at])
            who = prefix.group("who") if prefix else "launcher"
            text = line[at:].strip()
            with self._lock:
                if text.removeprefix(WAIT_MARK).strip().startswith(f"{OVER}:"):
                    self._waiting.pop(who, None)
                else:
                    self._waiting[who] = text
            say(text)

    def waiting(self) -> str | None:
        """What the last wait line of a worker whose games still wait on the judge says, else None."""
        with self._lock:
            line = next(iter(self._waiting.values()), None)
        return line.removeprefix(WAIT_MARK).strip() if line is not None else None
