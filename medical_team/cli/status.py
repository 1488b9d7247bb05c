"""`medplay status OUTPUT_DIR`: where a run is, how long it has been there and how long that usually takes.

Read from the run's progress record (medical_team/run/progress_record.py) and its watchdog's folder
(medical_team/run/watchdog_files.py): the settings it watches with (the phase's limit), a stall declared and not yet
restarted, and its restarts (`events.jsonl`).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import psutil

from medical_team.common.errors import UserInputError
from medical_team.run.progress_record import PHASES, progress_path, read_progress
from medical_team.run.settings import WatchdogSettings
from medical_team.run.stall_limits import phase_limit
from medical_team.run.watchdog_files import EVENTS_NAME, SETTINGS_NAME, STALL_NAME, WATCHDOG_FOLDER


def status_lines(output_dir: Path, now: float | None = None) -> list[str]:
    """The lines `medplay status` prints for the run in `output_dir`."""
    progress = read_progress(progress_path(output_dir))
    if progress is None:
        raise UserInputError(
            "no progress record here: not a run's output folder (medplay.output_dir), or its run has not started",
            file=str(progress_path(output_dir)),
        )
    now = time.time() if now is None else now
    seconds = progress.seconds_in_phase(now)
    usual = progress.usual_s()
    does = PHASES[progress.phase].does if progress.phase in PHASES else "?"
    line = f"step {progress.step}, {progress.phase} ({does}) for {seconds:.0f} s"
    line += f"; usually {usual:.1f} s" if usual is not None else "; no earlier duration"
    folder = output_dir / WATCHDOG_FOLDER
    settings = _settings(folder / SETTINGS_NAME)
    if settings is not None:
        line += f"; stall limit {phase_limit(progress, settings):.0f} s"
    writer = "is running" if psutil.pid_exists(progress.pid) else "has ended"
    lines = [f"run: {output_dir} (attempt {progress.attempt}; the record's writer, pid {progress.pid}, {writer})", line]
    stall = folder / STALL_NAME
    if stall.is_file():
        declared = json.loads(stall.read_text())
        lines.append(f"stall declared: step {declared['step']} in {declared['phase']}; record: {declared['record']}")
    events = folder / EVENTS_NAME
    restarts = [json.loads(row) for row in events.read_text().splitlines() if row] if events.is_file() else []
    restarts = [event for event in restarts if event["event"] == "restart"]
    if restarts:
        last = restarts[-1]
        cause = f"stall in {last['phase']}" if last["stall"] else f"exit status {last['status']} in {last['phase']}"
        lines.append(f"restarts: {len(restarts)}; the last at {last['time']} after a {cause} at step {last['step']}")
    return lines


def _settings(path: Path) -> WatchdogSettings | None:
    try:
        return WatchdogSettings(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def run(args: argparse.Namespace) -> int:
    """Print where the run in `args.output_dir` is."""
    for line in status_lines(args.output_dir):
        print(line)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay status`."""
    parser = subparsers.add_parser(
        "status",
        help="where a run is: step, phase, seconds in it, its usual time and limit, stalls and restarts",
    )
    parser.add_argument("output_dir", type=Path, metavar="OUTPUT_DIR", help="the run's medplay.output_dir")
    parser.set_defaults(run=run)
