"""The watchdog: runs the attempts of one training run, sees one that stops moving, records it and restarts the run.

`medplay train` becomes this process (medical_team/cli/train.py) and starts the run itself as a child
(`medplay train` again, with `MEDPLAY_WATCHDOG_ATTEMPT` set), in a session of its own. Every `poll_s` it reads the
run's progress record (medical_team/run/progress_record.py); a phase past its limit (run/stall_limits.py) is a stall: the stacks of
every process of the attempt go to `<output>/hangs/<UTC time>/` (hang_record.py), the attempt is stopped (TERM, a
grace, KILL: run_processes.py), its orphaned shared memory removed, and the run restarted from its newest verified
checkpoint. An attempt that exits with a status outside `FINAL_EXITS` is restarted the same way. After
`max_restarts` restarts in a row that did not move the verified checkpoint forward, the run ends with
`REPEATED_FAILURE_EXIT` (with `max_restarts` 0: a stall ends it so, a crash with the attempt's own status). A save still writing (its step folder growing) is not a stall. SIGTERM and SIGINT are handed to
the attempt, which saves and stops as it would alone; the watchdog then ends with its status and restarts nothing.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from medical_team.run.failures import FINAL_EXITS, REPEATED_FAILURE_EXIT
from medical_team.run.progress_record import STARTUP, Progress, progress_path, read_progress
from medical_team.run.settings import WatchdogSettings
from medical_team.run.shm_segments import remove_orphaned_segments, shm_segments
from medical_team.run.stall_limits import NOTICE_SHARE, phase_limit, wait_notice
from medical_team.run.watchdog_files import EVENTS_NAME, SETTINGS_NAME, STALL_NAME, WATCHDOG_FOLDER
from medical_team.run_folder.checkpoint_folder import read_tracker, step_dirs
from medical_team.watchdog.hang_record import Stall, hang_folder, write_hang_record
from medical_team.watchdog.run_processes import attempt_processes, stop_processes

ATTEMPT_ENV = "MEDPLAY_WATCHDOG_ATTEMPT"  # set in an attempt's `medplay train`: it trains in its own process
WATCHDOG_PID_ENV = "MEDPLAY_WATCHDOG_PID"  # the watchdog an attempt ends with (launcher/watched_run.py)
PROCESS_TITLE = "medplay watchdog"


@dataclass(frozen=True)
class WatchedRun:
    """What the watchdog needs of a run, from its composed config."""

    command: list[str]  # an attempt's command line
    output_dir: Path
    checkpoint_dir: Path
    run_folder: str  # the run's key in its processes' environment (MEDPLAY_RUN_FOLDER)
    settings: WatchdogSettings
    pass_fds: tuple[int, ...] = ()  # the run lock an appliance's pipeline holds for it
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))


@dataclass(frozen=True)
class Ending:
    """How one attempt ended: its exit status, and the stall that ended it if one did."""

    status: int
    stall: Stall | None = None
    record: Path | None = None
    phase: str = ""
    step: int = 0


def say(message: str) -> None:
    """A line of the watchdog's on the console."""
    print(f"medplay: watchdog: {message}", file=sys.stderr, flush=True)


class Watchdog:
    """Runs a `WatchedRun` to its end, restarting it as the settings allow."""

    def __init__(self, run: WatchedRun) -> None:
        self.run = run
        self.folder = run.output_dir / WATCHDOG_FOLDER
        self.progress = progress_path(run.output_dir)
        self.child: subprocess.Popen | None = None
        self.stop_signal: int | None = None
        self.active = False  # an attempt got past its checks (wrote its record): the watchdog writes in the folder

    def watch(self) -> int:
        """Run attempts until one ends for good; its exit status (or REPEATED_FAILURE_EXIT). SIGTERM and SIGINT are
        handed to the attempt meanwhile; their handlers are restored after."""
        handlers = {sig: signal.signal(sig, self._forward) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            return self._watch()
        finally:
            for sig, handler in handlers.items():
                signal.signal(sig, handler)

    def _watch(self) -> int:
        settings = self.run.settings
        verified = read_tracker(self.run.checkpoint_dir)
        in_a_row, attempt = 0, 1
        while True:
            ending = self._attempt(attempt)
            if self.stop_signal is not None or (ending.stall is None and ending.status in FINAL_EXITS):
                self._event("end", attempt, ending)
                return ending.status
            now_verified = read_tracker(self.run.checkpoint_dir)
            if now_verified != verified:
                in_a_row = 0
            verified = now_verified
            if settings.max_restarts == 0 and ending.stall is None:  # restarts off: the attempt's own status
                self._event("end", attempt, ending)
                return ending.status
            if in_a_row >= settings.max_restarts:
                self._event("gave up", attempt, ending)
                say(self._giving_up(ending, in_a_row, verified))
                return REPEATED_FAILURE_EXIT
            in_a_row += 1
            attempt += 1
            start = f"global_step_{verified}" if verified is not None else "the start (no verified checkpoint yet)"
            say(
                f"{self._what_ended(ending)}; restarting from {start} "
                f"(restart {in_a_row} of at most {settings.max_restarts} in a row without a newer checkpoint)"
            )
            self._event("restart", attempt, ending)

    def _attempt(self, attempt: int) -> Ending:
        """Start attempt `attempt`, watch it to its end; how it ended."""
        segments = shm_segments()
        started = time.time()
        env = {**self.run.env, ATTEMPT_ENV: str(attempt), WATCHDOG_PID_ENV: str(os.getpid())}
        self.child = subprocess.Popen(self.run.command, env=env, start_new_session=True, pass_fds=self.run.pass_fds)
        (self.folder / STALL_NAME).unlink(missing_ok=True)
        try:
            resumes_after = read_tracker(self.run.checkpoint_dir) or 0
            return self._until_end(self.child, attempt, started, resumes_after)
        finally:
            remove_orphaned_segments(segments)

    def _current(self, attempt: int, started: float, child: subprocess.Popen, resumes_after: int) -> Progress:
        """The attempt's record; until its launcher has written one (its checks passed), its start-up since launch."""
        progress = read_progress(self.progress)
        if progress is not None and progress.attempt == attempt and progress.since >= started:
            if not self.active:
                self.active = True  # the run got going: its folder is the watchdog's to write in from now on
                self.folder.mkdir(parents=True, exist_ok=True)
                (self.folder / SETTINGS_NAME).write_text(json.dumps(dataclasses.asdict(self.run.settings)) + "\n")
            return progress
        return Progress(resumes_after, STARTUP, started, None, attempt, child.pid)

    def _until_end(self, child: subprocess.Popen, attempt: int, started: float, resumes_after: int) -> Ending:
        """Poll `child` and the progress record until the child exits or stalls."""
        save = SaveActivity(self.run.checkpoint_dir)
        noticed: tuple[str, int, float] | None = None  # the phase whose wait was said
        while True:
            try:
                status = child.wait(timeout=self.run.settings.poll_s)
            except subprocess.TimeoutExpired:
                status = None
            progress = self._current(attempt, started, child, resumes_after)
            if status is not None:
                status = 128 - status if status < 0 else status  # killed by a signal: the shell's convention
                return Ending(status, phase=progress.phase, step=progress.step)
            if self.stop_signal is not None:
                continue
            quiet_since = max(progress.since, save.last_growth(progress))
            seconds, limit = time.time() - quiet_since, phase_limit(progress, self.run.settings)
            # Said before a stall is acted on, even when one late poll finds the phase past both.
            if seconds > NOTICE_SHARE * limit and noticed != (progress.phase, progress.step, progress.since):
                noticed = (progress.phase, progress.step, progress.since)
                self._say_in_log(wait_notice(progress, seconds, limit), started)
            if seconds > limit:
                stall = Stall(progress.phase, progress.step, round(seconds, 1), round(limit, 1), progress.attempt)
                return self._stalled(child, stall, progress, started)

    def _stalled(self, child: subprocess.Popen, stall: Stall, progress: Progress, started: float) -> Ending:
        """Record the stall, stop every process of the attempt, and say so."""
        processes = attempt_processes(child.pid, self.run.run_folder)
        folder = hang_folder(self.run.output_dir, time.time())
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / STALL_NAME).write_text(json.dumps({**stall.__dict__, "record": str(folder)}) + "\n")
        say(f"{stall.sentence()}: writing the stacks of its {len(processes)} processes to {folder}")
        write_hang_record(folder, stall, progress, processes, attempt_log(self.run.output_dir, started))
        self._say_in_log(stall.sentence(folder), started, console=False)
        killed = stop_processes(processes, child, self.run.settings.kill_grace_s)
        say(
            f"stopped the attempt's {len(processes)} processes"
            + (f" ({len(killed)} needed SIGKILL after {self.run.settings.kill_grace_s:g} s)" if killed else "")
        )
        status = child.returncode if child.returncode is not None else -signal.SIGKILL
        return Ending(128 - status if status < 0 else status, stall, folder, stall.phase, stall.step)

    def _say_in_log(self, message: str, started: float, *, console: bool = True) -> None:
        """`message` in the log of the attempt that started at `started` (when it has one), and on the console."""
        if console:
            say(message)
        log_file = attempt_log(self.run.output_dir, started)
        if log_file is not None:
            with log_file.open("a", encoding="utf-8") as log:
                log.write(f"medplay: watchdog: {message}\n")

    def _forward(self, signum: int, _frame: object) -> None:
        """SIGTERM/SIGINT: hand it to the attempt, which saves and stops; nothing is restarted after."""
        self.stop_signal = signum
        if self.child is not None and self.child.poll() is None:
            say(f"{signal.Signals(signum).name} received: handing it to the run (pid {self.child.pid})")
            self.child.send_signal(signum)

    def _what_ended(self, ending: Ending) -> str:
        if ending.stall is not None:
            return ending.stall.sentence(ending.record)
        where = f" in {ending.phase} at step {ending.step}" if ending.phase else ""
        return f"the run ended with exit status {ending.status}{where}"

    def _giving_up(self, ending: Ending, restarts: int, verified: int | None) -> str:
        at = f"global_step_{verified}" if verified is not None else "no checkpoint"
        return (
            f"{self._what_ended(ending)}; {restarts} restart(s) in a row did not move the run past {at} "
            f"(medplay.watchdog.max_restarts={self.run.settings.max_restarts}): it keeps stopping in "
            f"{ending.phase or 'an unknown phase'}; ending with exit status {REPEATED_FAILURE_EXIT}"
        )

    def _event(self, what: str, attempt: int, ending: Ending) -> None:
        """One line of `watchdog/events.jsonl` (none for a run refused before it began: its folder stays as it was)."""
        if not self.active and ending.stall is None:
            return
        record = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "event": what,
            "attempt": attempt,
            "status": ending.status,
            "phase": ending.phase,
            "step": ending.step,
            "stall": None if ending.stall is None else ending.stall.__dict__,
            "record": None if ending.record is None else str(ending.record),
            "verified_step": read_tracker(self.run.checkpoint_dir),
        }
        self.folder.mkdir(parents=True, exist_ok=True)
        with (self.folder / EVENTS_NAME).open("a", encoding="utf-8") as events:
            events.write(json.dumps(record) + "\n")


class SaveActivity:
    """When the checkpoint being saved last grew: a save still writing is not a stall."""

    def __init__(self, checkpoint_dir: Path) -> None:
        self.checkpoint_dir = checkpoint_dir
        self._seen: tuple[int, int] | None = None  # (step, bytes)
        self._grew = 0.0

    def last_growth(self, progress: Progress) -> float:
        """The last time the step folder of a save in progress grew (0 when no save is in progress)."""
        if progress.phase != "checkpoint_save":
            self._seen = None
            return 0.0
        folder = step_dirs(self.checkpoint_dir).get(progress.step)
        size = _bytes_under(folder) if folder is not None else 0
        if self._seen != (progress.step, size):
            self._seen, self._grew = (progress.step, size), time.time()
        return self._grew


def _bytes_under(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        try:
            total += path.stat().st_size
        except OSError:
            continue
    return total


def attempt_log(output_dir: Path, started: float) -> Path | None:
    """The run log an attempt that started at `started` writes (the newest `logs/train-*.log` since then)."""
    logs = [path for path in (output_dir / "logs").glob("train-*.log") if path.stat().st_mtime >= started - 1]
    return max(logs, key=lambda path: path.stat().st_mtime, default=None)


def watch(run: WatchedRun) -> int:
    """Run `run` under the watchdog; its exit status."""
    return Watchdog(run).watch()


def become_watchdog(run: WatchedRun) -> int:
    """This process, named `medplay watchdog` (how run/processes.py tells it from the run's launcher), watches `run`."""
    import setproctitle

    title = setproctitle.getproctitle()
    setproctitle.setproctitle(f"{PROCESS_TITLE} {run.output_dir}")
    try:
        return watch(run)
    finally:
        setproctitle.setproctitle(title)
