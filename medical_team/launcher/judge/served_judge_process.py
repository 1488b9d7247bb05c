"""The served judge's vLLM server process: started in its own process group, watched, stopped.

`JudgeServer` launches the command (served_judge_command.py) through medical_team/judge_server/served_judge_exec.py,
so that the server ends with the launcher, and watches it on daemon threads (docs/reliability.md, "The served judge
fails"): while it starts, a console line every `report_every_s` with the seconds waited and its log's last
line; a fatal line in its log (FATAL_LINES), its exit, or (once it answered) `health_failures` failed
`/health` probes in a row fail it with its log's last lines, the phase (START_UP or SERVING) and the setting
to change. Stopping it: TERM to its process group, then KILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from medical_team.judge_server import served_judge_exec
from medical_team.launcher.console.appended_lines import AppendedLines
from medical_team.launcher.console.console import say
from medical_team.launcher.console.startup import ready_line
from medical_team.launcher.judge.served_judge_command import MODEL_KNOB, FatalLine, fatal_line
from medical_team.launcher.judge.served_judge_plan import served_url
from medical_team.launcher.process_group import stop_process_group
from medical_team.run.failures import JUDGE_START_UP, OUT_OF_MEMORY_EXIT, JudgeServerError
from medical_team.run.judge_server_ready import answers, healthy

STAGE = "judge server"  # its name on the console's startup lines
EXEC_WRAPPER = served_judge_exec.__name__  # run with `python -m`, the server's command after it
STOP_GRACE_S = 30.0
FAILED_STOP_GRACE_S = 2.0  # a failed server is not waited for: the run ends within seconds
# The phases a judge failure names: before its first answer, and after it.
START_UP = JUDGE_START_UP
SERVING = "judge serving"
TAIL_LINES = 12  # of its log, shown on the console when it fails
# The setting to change, by cause (a fatal line names its own: served_judge_command.FATAL_LINES).
TIMEOUT_KNOB = "raise medplay.judge.serve.startup_timeout_s if it was still loading"
SERVING_KNOB = (
    "its log says why; to train meanwhile, use a judge served elsewhere "
    "(medplay.judge.backend=openai with medplay.judge.url)"
)


@dataclass(frozen=True)
class Supervision:
    """How closely the launcher watches the judge's server (tests shorten the periods)."""

    poll_s: float = 1.0  # log lines, readiness
    answer_timeout_s: float = 2.0  # one readiness request while it starts
    report_every_s: float = 30.0  # a console line while it starts
    health_every_s: float = 5.0  # between `/health` probes once it answered
    health_timeout_s: float = 10.0
    # Failed probes in a row that end the run: a server that stops answering is found within
    # 3 × (period + timeout) = 45 s.
    health_failures: int = 3


class JudgeServer:
    """One vLLM OpenAI server process of the judge model, in its own process group, watched by daemon threads."""

    def __init__(
        self,
        command: list[str],
        port: int,
        log_file: Path,
        startup_timeout_s: float,
        environment: Mapping[str, str] | None = None,
        supervision: Supervision = Supervision(),
    ) -> None:
        self.command = command
        self.environment = dict(environment or {})  # set over this process's own for the server
        self.url = served_url(port)
        self.log_file = log_file
        self.startup_timeout_s = startup_timeout_s
        self.supervision = supervision
        self.process: subprocess.Popen[bytes] | None = None
        self.failure: JudgeServerError | None = None
        self.ready = threading.Event()
        self._settled = threading.Event()  # ready or failed
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._on_failure: Callable[[JudgeServerError], None] = lambda error: None
        self._lines = AppendedLines(log_file)
        self._log_start = 0
        self._launched = 0.0

    def launch(self) -> None:
        """Start the server's process and return at once."""
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self._lines.skip_existing()  # an earlier run's lines in the same log are not this server's
        self._log_start = self._lines.offset
        env = {key: value for key, value in os.environ.items() if not (key == "VLLM_CPU_KVCACHE_SPACE" and not value)}
        env.update(self.environment)
        with open(self.log_file, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", EXEC_WRAPPER, *self.command],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )  # fmt: skip
        self._launched = time.monotonic()

    def start(self) -> None:
        """Start the server and return once it answers; raise JudgeServerError (with its log's end) otherwise."""
        self.launch()
        self.supervise()
        self.await_ready()

    def supervise(self, on_failure: Callable[[JudgeServerError], None] | None = None) -> None:
        """Watch the launched server on daemon threads; `on_failure` gets its first failure, once."""
        if on_failure is not None:
            self._on_failure = on_failure
        threading.Thread(target=self._watch_exit, name="judge-server-exit", daemon=True).start()
        threading.Thread(target=self._watch_log, name="judge-server-log", daemon=True).start()

    def await_ready(self) -> None:
        """Block until the supervised server answers; raise its JudgeServerError if it failed first."""
        self._settled.wait()
        if self.failure is not None:
            raise self.failure

    def _watch_exit(self) -> None:
        """Its exit, at any moment, fails the run at once (nothing polls: `wait` returns as it ends)."""
        assert self.process is not None
        code = self.process.wait()
        found = fatal_line(self._log_since_launch().splitlines())
        if found is not None:  # the same failure the log's watcher would report, whichever thread is first
            self._fail_fatal(*found)
        else:
            self._fail(f"exited with status {code}", MODEL_KNOB if not self.ready.is_set() else SERVING_KNOB)

    def _log_since_launch(self) -> str:
        """What the server wrote to its log."""
        try:
            with self.log_file.open("rb") as log:
                log.seek(self._log_start)
                return log.read().decode(errors="replace")
        except OSError:
            return ""

    def _fail_fatal(self, fatal: FatalLine, line: str) -> None:
        self._fail(f"logged a fatal line: {line.strip()[:300]}", fatal.knob, memory=fatal.memory)

    def _watch_log(self) -> None:
        """Read its new log lines for fatal ones; until it answers, poll it and say how long it has been waited for."""
        watch = self.supervision
        next_report = watch.report_every_s
        while not self._stop_watching(watch.poll_s):
            found = fatal_line(self._lines.read())
            if found is not None:
                self._fail_fatal(*found)
                return
            if self.ready.is_set():
                continue
            waited = time.monotonic() - self._launched
            if answers(self.url, watch.answer_timeout_s):
                self._became_ready(waited)
            elif waited > self.startup_timeout_s:
                self._fail(f"did not answer within {self.startup_timeout_s:.0f} s", TIMEOUT_KNOB)
                return
            elif waited >= next_report:
                next_report += watch.report_every_s
                say(f"medplay: {STAGE}: waiting for its first answer, {waited:.0f} s so far; {self._tail()}")

    def _became_ready(self, waited: float) -> None:
        """Say so, and start the health probes."""
        say(ready_line(STAGE, waited))
        self.ready.set()
        self._settled.set()
        threading.Thread(target=self._probe_health, name="judge-server-health", daemon=True).start()

    def _probe_health(self) -> None:
        """Probe `/health` every health_every_s; HEALTH_FAILURES failures in a row end the run."""
        watch = self.supervision
        failures = 0
        while not self._stop_watching(watch.health_every_s):
            if healthy(self.url, watch.health_timeout_s):
                failures = 0
                continue
            failures += 1
            if failures >= watch.health_failures:
                what = (
                    f"stopped answering: {failures} health probes in a row failed ({watch.health_timeout_s:.0f} s each)"
                )
                self._fail(what, SERVING_KNOB)
                return

    def _stop_watching(self, wait_s: float) -> bool:
        """Wait `wait_s`; true once the server failed or is being stopped."""
        return self._stopping.wait(wait_s) or self.failure is not None

    def _fail(self, what: str, knob: str, *, memory: bool = False) -> None:
        """Record the first failure, show its log's last lines on the console, and hand it to `on_failure`."""
        phase = SERVING if self.ready.is_set() else START_UP
        error = JudgeServerError(f"{phase}: the judge's vLLM server {what}; {knob}; {self._tail()}", phase=phase)
        if memory:
            error.exit_status = OUT_OF_MEMORY_EXIT
        with self._lock:
            if self.failure is not None or self._stopping.is_set():
                return
            self.failure = error
        say(f"medplay: {STAGE}: failed ({phase}); the last lines of {self.log_file}:", err=True)
        for line in self.last_lines(TAIL_LINES):
            say(f"    {line[:300]}", err=True)
        self._settled.set()  # after the lines: whoever waits for the start goes on with them said
        self._on_failure(error)

    def last_lines(self, count: int) -> list[str]:
        """The last `count` non-empty lines of its log."""
        try:
            text = self.log_file.read_text(errors="replace").splitlines()
        except OSError:
            return []
        return [line.rstrip() for line in text if line.strip()][-count:]

    def _tail(self) -> str:
        """Where its log is, with the log's last non-empty line."""
        last = self.last_lines(1)
        return f"its log: {self.log_file}" + (f": {last[0].strip()[:300]}" if last else "")

    def kill(self) -> None:
        """KILL the server's process group now."""
        with self._lock:
            self._stopping.set()
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        """TERM the server's process group, KILL it after STOP_GRACE_S (FAILED_STOP_GRACE_S once it failed)."""
        with self._lock:
            self._stopping.set()
        grace = FAILED_STOP_GRACE_S if self.failure is not None else STOP_GRACE_S
        if self.process is not None:
            stop_process_group(self.process, grace)
