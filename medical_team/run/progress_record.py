"""Where a run is: its step, the phase of the step it is in and since when, and how long each phase usually takes.

One small JSON file, `<medplay.output_dir>/progress.json`, replaced atomically (a temporary file, then `os.replace`)
each time a phase begins, by the process that runs the phase: the watchdog writes `start-up` as it starts an attempt
(medical_team/watchdog/), verl's trainer each phase of a step (medical_team/task_runner/phase_marks.py). The watchdog
reads it to tell a stall from a slow phase, `medplay status` to show it. Each phase's last `DURATIONS_KEPT` durations
travel in the file, so what the run learned of its phases survives a restart.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

PROGRESS_NAME = "progress.json"
STARTUP = "start-up"


class Phase(NamedTuple):
    """What a phase does, and what the process that marked it waits for meanwhile (said when it lasts)."""

    does: str
    waits_for: str


# The phases of a step in the order they run (validation and the save only on their steps).
PHASES: dict[str, Phase] = {
    STARTUP: Phase(
        "start-up: Ray, the workers, the model, vLLM, the checkpoint loaded",
        "the run's start (the console's last `starting` line names the stage: Ray, a served judge, the trainer "
        "process, the data loaders, the FSDP engines, the rollout's vLLM server)",
    ),
    "generation": Phase(
        "generation and judging: the agent loops play the step's games",
        "the agent-loop workers' games: the rollout's vLLM server generating, the judge's verdicts",
    ),
    "old_log_prob": Phase("old log-probabilities of the actor", "the FSDP actor worker's forward pass"),
    "reference": Phase("the reference policy's log-probabilities", "the FSDP reference worker's forward pass"),
    "advantage": Phase(
        "the step's reward terms and advantages, in the trainer", "the trainer's own reward and advantage computation"
    ),
    "update": Phase("the actor's update", "the FSDP actor worker's update and its collectives"),
    "checkpoint_save": Phase("the checkpoint save", "the FSDP workers writing the checkpoint"),
    "weight_sync": Phase(
        "the weight sync to the rollout", "the FSDP actor and the rollout's vLLM server exchanging the weights"
    ),
    "validation": Phase("validation", "the agent-loop and reward workers playing the validation games"),
    "metrics": Phase("the step's metrics and its commit", "the trainer writing the step's metrics"),
}
DURATIONS_KEPT = 20  # per phase: the window of its rolling median


def progress_path(output_dir: Path | str) -> Path:
    """The progress record of the run whose output folder is `output_dir`."""
    return Path(output_dir) / PROGRESS_NAME


@dataclass(frozen=True)
class Progress:
    """One reading of the record."""

    step: int  # the step the phase belongs to (0 before the first)
    phase: str
    since: float  # when the phase began (seconds since the epoch)
    first_step: int | None  # this attempt's first step (None while it starts)
    attempt: int  # 1 for a run's first start, +1 for each restart by the watchdog
    pid: int  # the process that wrote it
    durations: dict[str, list[float]] = field(default_factory=dict)

    def seconds_in_phase(self, now: float | None = None) -> float:
        """How long the phase has lasted so far."""
        return max(0.0, (time.time() if now is None else now) - self.since)

    def usual_s(self, phase: str | None = None) -> float | None:
        """The median of the phase's recorded durations (this phase by default), None before any."""
        durations = self.durations.get(phase or self.phase, [])
        return statistics.median(durations) if durations else None


def read_progress(path: Path) -> Progress | None:
    """The record at `path`, or None when there is none yet (or it is not one)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Progress(
            step=int(data["step"]),
            phase=str(data["phase"]),
            since=float(data["since"]),
            first_step=None if data.get("first_step") is None else int(data["first_step"]),
            attempt=int(data.get("attempt", 1)),
            pid=int(data.get("pid", 0)),
            durations={str(k): [float(v) for v in values] for k, values in data.get("durations", {}).items()},
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


class ProgressWriter:
    """Writes the record of one process: each `enter` ends the phase before it (its duration kept) and begins one."""

    def __init__(self, path: Path, *, attempt: int | None = None) -> None:
        """Continue the record at `path`: its durations, and its attempt unless `attempt` is given."""
        self._path = path
        earlier = read_progress(path)
        self._durations = dict(earlier.durations) if earlier else {}
        self._attempt = attempt if attempt is not None else (earlier.attempt if earlier else 1)
        self._first_step: int | None = None  # a new writer is a new attempt's: its first step is still to come
        self._phase: str | None = None
        self._step = 0
        self._since = 0.0

    def enter(self, phase: str, step: int) -> None:
        """Record that `phase` of `step` begins now; the phase before it, if any, ended now."""
        if phase not in PHASES:
            raise ValueError(f"unknown phase {phase!r}: one of {', '.join(PHASES)}")
        now = time.time()
        if self._phase is not None and self._phase != STARTUP:
            kept = [*self._durations.get(self._phase, []), round(now - self._since, 3)]
            self._durations[self._phase] = kept[-DURATIONS_KEPT:]
        if self._first_step is None and phase != STARTUP:
            self._first_step = step
        self._phase, self._step, self._since = phase, step, now
        self._write()

    def _write(self) -> None:
        record = {
            "step": self._step,
            "phase": self._phase,
            "since": self._since,
            "first_step": self._first_step,
            "attempt": self._attempt,
            "pid": os.getpid(),
            "durations": self._durations,
        }
        self._path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self._path.with_name(f".{self._path.name}.{os.getpid()}")
        temporary.write_text(json.dumps(record), encoding="utf-8")
        os.replace(temporary, self._path)
