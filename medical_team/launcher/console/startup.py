"""Startup stages on the console: each one as it begins and as it ends, with its seconds.

The launcher times what it runs itself (Ray, the judge's server: `stage`). verl's trainer starts
inside a Ray actor whose output reaches only the run's log, so its stages are read back from that log
(`TrainerStages`): verl's own INFO lines (verl/trainer/ppo/v1/trainer_base.py, `_setup`) mark where
each stage ends, and the next one begins there. The lines matched are a contact with verl, listed in
docs/verl-integration.md and checked against verl's source by tests/launcher/console/test_startup_stages.py.
`ready_stages` reads the seconds back from a console (scripts/gpu_kit_train.py, `medplay bench step`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from medical_team.launcher.console.appended_lines import FileFollower
from medical_team.launcher.console.compile_lines import compile_note
from medical_team.launcher.console.console import say


@dataclass(frozen=True)
class TrainerStage:
    """A stage of verl's trainer start and the text of verl's log line that ends it."""

    name: str
    ends_with: str


# In the order they pass. The trainer's process is the Ray actor's start and imports until verl's task runner
# prints the whole config (`TaskRunnerV1.run`, pprint, keys sorted: `actor_rollout_ref` comes first); then
# verl's `_setup`, where the worker group's creation belongs to the engines' stage.
TRAINER_STAGES = (
    TrainerStage("trainer process", "{'actor_rollout_ref': "),
    TrainerStage("data loaders", "train and validate dataloader initialized"),
    TrainerStage("actor and reference engines", "actor and ref model engine initialized"),
    TrainerStage("rollout server", "all initialize finished, ready to fit"),
)
# The trainer's whole start, from `medplay train`'s: its own ready line and its key in `ready_stages`.
TRAINER_READY = "verl's trainer"
# A stage's end as `ready_line` and the trainer's ready line say it.
READY_LINE = re.compile(r"^medplay: (?P<stage>[^:\n]+?):? ready after (?P<seconds>\d+(?:\.\d+)?) s", re.MULTILINE)


def started_line(name: str, detail: str = "") -> str:
    """`medplay: <stage>: starting[ detail]`."""
    return f"medplay: {name}: starting{f' {detail}' if detail else ''}"


def ready_line(name: str, seconds: float) -> str:
    """`medplay: <stage>: ready after N s` (`ready_stages` reads these back)."""
    return f"medplay: {name}: ready after {seconds:.0f} s"


def ready_stages(console: str) -> dict[str, float]:
    """The seconds of every stage whose ready line a console shows, the trainer's whole start as `TRAINER_READY`."""
    return {match["stage"]: float(match["seconds"]) for match in READY_LINE.finditer(console)}


@contextmanager
def stage(name: str, detail: str = "") -> Iterator[None]:
    """Say the stage's start, run the block, say its end with the seconds it took."""
    say(started_line(name, detail))
    started = time.monotonic()
    yield
    say(ready_line(name, time.monotonic() - started))


class TrainerStages(FileFollower):
    """Context manager: while active, a thread reads the run log and says verl's startup stages as they pass."""

    def __init__(
        self,
        log_file: Path,
        run_started: float | None = None,
        poll_s: float = 0.5,
        stages: tuple[TrainerStage, ...] = TRAINER_STAGES,
    ) -> None:
        self.log_file = log_file
        self.run_started = run_started  # time.monotonic() when `medplay train` began; None: when this began
        self.poll_s = poll_s
        self.stages = stages
        self.durations: dict[str, float] = {}
        self._next = 0
        self._said: set[str] = set()  # compile notes said once each
        self._begun = 0.0
        self._started = 0.0
        super().__init__(log_file, poll_s, "medplay-startup", done=lambda: self._next >= len(self.stages))

    def __enter__(self) -> Self:
        self._begun = time.monotonic()
        self._started = self.run_started if self.run_started is not None else self._begun
        say(started_line(self.stages[0].name))
        return super().__enter__()

    def starting(self) -> str | None:
        """The stage verl's trainer is in while it starts; None once it is ready to train."""
        return self.stages[self._next].name if self._next < len(self.stages) else None

    def poll(self) -> None:
        """Say the end of every stage whose line reached the log since the last poll, and the start of the next."""
        for line in self._lines.read():
            note = compile_note(line)
            if note is not None and note not in self._said:
                self._said.add(note)
                say(f"medplay: {self.starting() or 'rollout server'}: {note}")
            if self._next >= len(self.stages) or self.stages[self._next].ends_with not in line:
                continue
            now = time.monotonic()
            done = self.stages[self._next]
            self.durations[done.name] = now - self._begun
            say(ready_line(done.name, now - self._begun))
            self._next += 1
            self._begun = now
            if self._next < len(self.stages):
                say(started_line(self.stages[self._next].name))
            else:
                say(f"medplay: {TRAINER_READY} ready after {now - self._started:.0f} s; one line per step follows")
                self.durations[TRAINER_READY] = now - self._started
