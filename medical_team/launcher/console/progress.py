"""One console line per training step with its key numbers, read from the metrics JSONL as verl's file logger writes it.

Only records appended after the watcher started are shown, so a resumed run does not repeat the
steps an earlier run logged. Each step's line also says the time since the watcher started (the trainer's start)
and, while steps remain, an estimate of the time left: the mean `timing_s/step` of this run's steps times the
steps left. Each whole line is parsed by `medical_team.run_folder.metrics_records.parse_record`,
as every reader of the file parses it; a line that is not a record is named (file and line) on
stderr. A step whose record shows a collapse alarm firing (`alarm/<name>` at least
`medplay.monitors.patience`) gets a warning line on stderr as well. The first step whose record forecasts that host
memory or the checkpoint volume reaches its floor before the run's last step (`resources/<resource>_floor_step`:
medical_team/reliability/resource_watch.py) says so at the end of its line, once per resource.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from medical_team.common.errors import UserInputError
from medical_team.game.alarm import STREAK_PREFIX, AlarmFiring
from medical_team.launcher.console.appended_lines import FileFollower
from medical_team.launcher.console.console import say
from medical_team.reliability.resource_watch import Resource, floor_step_metric
from medical_team.run.benchmark_validation import BENCHMARK_ACCURACY_METRIC
from medical_team.run.settings import MonitorSettings
from medical_team.run_folder.metrics_records import parse_record

# (metric, format) shown after the bar; the per-step summary after training shows more.
KEY_METRICS = (
    ("timing_s/step", "{:.1f} s"),
    ("assessor/accuracy", "assessor acc {:.2f}"),
    ("assessor/error_verdict_share", "ERROR share {:.2f}"),  # a collapse onto one verdict shows at once
    ("attacker/success_rate", "attacker success {:.2f}"),
    ("game/tie_rate", "ties {:.2f}"),
    ("actor/pg_loss", "pg_loss {:.3g}"),
    (BENCHMARK_ACCURACY_METRIC, "benchmark acc {:.2f}"),
)
BAR_WIDTH = 20
# A monitor logs 0.0 in a step without enough games to measure it; the line says so instead of showing a collapse.
# The majority verdict's share is at least 0.5 when measured (two readable verdicts) and 0.0 when not.
UNMEASURED = {"assessor/error_verdict_share": "ERROR share n/a"}


def unmeasured(name: str, data: dict[str, float]) -> bool:
    """Whether this step had too few readable verdicts to measure `name` (one of UNMEASURED's)."""
    return name in UNMEASURED and data.get("assessor/majority_verdict_share") == 0.0


def duration(seconds: float) -> str:
    """`m:ss`, or `h:mm:ss` from an hour on."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def clock_text(elapsed_s: float, step_seconds: list[float], step: int, total: int | None) -> str:
    """`elapsed 1:05  ETA 3:20` (no ETA when the total is unknown, reached, or no step was timed yet)."""
    text = f"elapsed {duration(elapsed_s)}"
    if total and step < total and step_seconds:
        text += f"  ETA {duration((total - step) * sum(step_seconds) / len(step_seconds))}"
    return text


def progress_line(step: int, total: int | None, data: dict[str, float], clock: str = "") -> str:
    """`step 2/3 [#############-------]  4.3 s  elapsed 0:09  ETA 0:04  assessor acc 0.50 ...` for one logged step.

    A record of a validation alone (before the first step, or after the last one of a run that stopped early)
    reads `validation at step N  benchmark acc 0.50`.
    """
    if BENCHMARK_ACCURACY_METRIC in data and "timing_s/step" not in data:
        head = f"validation at step {step}"
    elif total:
        filled = min(BAR_WIDTH, round(BAR_WIDTH * step / total))
        head = f"step {step}/{total} [{'#' * filled}{'-' * (BAR_WIDTH - filled)}]"
    else:
        head = f"step {step}"
    numbers = [
        UNMEASURED.get(name, fmt).format(data[name]) if unmeasured(name, data) else fmt.format(data[name])
        for name, fmt in KEY_METRICS
        if isinstance(data.get(name), int | float)
    ]
    timed = int("timing_s/step" in data and bool(numbers))  # the step's own seconds come before the clock
    return "  ".join([head, *numbers[:timed], *([clock] if clock else []), *numbers[timed:]])


def alarm_lines(step: int, data: dict[str, float], monitors: MonitorSettings) -> list[str]:
    """A warning line for each alarm that fired at this logged step."""
    lines = []
    for rule in monitors.rules:
        steps, value = data.get(f"{STREAK_PREFIX}{rule.name}"), data.get(rule.monitor)
        if isinstance(steps, int | float) and isinstance(value, int | float) and steps >= monitors.patience:
            lines.append(AlarmFiring(rule, float(value), int(steps)).message(step, monitors.action))
    return lines


def forecast_notes(data: dict[str, float], said: set[Resource]) -> list[str]:
    """`forecast: host memory reaches its floor at step 340` for each resource forecast for the first time (added to
    `said`)."""
    notes = []
    for resource in Resource:
        step = data.get(floor_step_metric(resource))
        if isinstance(step, int | float) and resource not in said:
            said.add(resource)
            notes.append(f"forecast: {resource.words} reaches its floor at step {int(step)}")
    return notes


class StepProgress(FileFollower):
    """Context manager: while active, a thread says a progress line for each step appended to `metrics_file`."""

    def __init__(
        self,
        metrics_file: Path,
        total_steps: int | None,
        poll_s: float = 1.0,
        monitors: MonitorSettings | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.metrics_file = metrics_file
        self.total_steps = total_steps
        self.monitors = monitors  # None: no alarm lines
        self.poll_s = poll_s
        self.clock = clock
        self.started = clock()
        self.step_seconds: list[float] = []  # this run's steps, for the estimate of the time left
        self.forecast: set[Resource] = set()  # the resources whose floor a step line has forecast
        super().__init__(metrics_file, poll_s, "medplay-progress")  # a resumed run's earlier steps are not new

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        super().__exit__(kind, error, trace)
        self.poll()  # steps logged between the last poll and the end of training

    def poll(self) -> None:
        """Say a line for every complete record appended since the last poll."""
        for number, line in self._lines.read_numbered():  # whole lines only: one being written waits for the next poll
            if not line.strip():
                continue
            try:
                step, data = parse_record(line, self.metrics_file.name, number)
            except UserInputError as error:
                say(f"medplay: metrics file: {error}", err=True)  # `medplay train` names it again after the run
                continue
            seconds = data.get("timing_s/step")
            if isinstance(seconds, int | float):
                self.step_seconds.append(float(seconds))
            elapsed = self.clock() - self.started
            clock = clock_text(elapsed, self.step_seconds, step, self.total_steps)
            say("  ".join([progress_line(step, self.total_steps, data, clock), *forecast_notes(data, self.forecast)]))
            for line in alarm_lines(step, data, self.monitors) if self.monitors else ():
                say(line, err=True)
