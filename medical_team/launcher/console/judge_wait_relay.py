"""The launcher's half of the judge waits: the wait lines the agent-loop workers print, said on the console.

The workers' half (medical_team/agent_loop/judge_waits.py) prints a WAIT_MARK line while games wait on the judge; Ray
forwards it to the run log only. `JudgeWaitRelay` follows the run log and says those lines on the console; its
`waiting()` tells the SIGTERM handler that a step cannot end soon (graceful_stop.py).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from medical_team.launcher.console.appended_lines import FileFollower
from medical_team.launcher.console.console import say
from medical_team.run.judge_wait_lines import OVER, WAIT_MARK

# Ray's prefix of a forwarded line, "(AgentLoopWorker pid=123, ip=...) ": which worker said it.
_RAY_PREFIX = re.compile(r"\((?P<who>[^)]*)\)\s*$")


class JudgeWaitRelay(FileFollower):
    """Context manager: while active, a thread says on the console each judge-wait line the run log receives."""

    def __init__(self, log_file: Path, poll_s: float = 1.0) -> None:
        self._waiting: dict[str, str] = {}  # the last wait line of each worker whose waits are not over
        self._lock = threading.Lock()
        super().__init__(log_file, poll_s, "medplay-judge-waits")

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
