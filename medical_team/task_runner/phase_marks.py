"""The trainer's half of the progress record: each phase of a step marked as it begins (medical_team/run/progress_record.py).

`PhaseMarks` sits between medplay's trainer and verl's: it marks the phases whose verl method medplay does not
otherwise override (generation, old log-probabilities, reference, update); the trainer marks the rest where its own
override begins (trainer.py: advantage, checkpoint save, weight sync, validation, metrics). A record that cannot be
written (a full disk) is said once in the log and never stops training: the watchdog then sees the phase go on.
Tests only: a phase that `MEDPLAY_INJECT_HOLD` holds in the trainer (run/phase_hold.py) waits right after its mark.
"""

from __future__ import annotations

import logging
from typing import Any

from medical_team.run.phase_hold import TRAINER_PHASES, PhaseHold, asked_holds
from medical_team.run.progress_record import ProgressWriter, progress_path

log = logging.getLogger(__name__)


class PhaseMarks:
    """Mixin for verl's trainer: `_mark(phase)` records that phase of the current step as begun."""

    global_steps: int
    _progress: ProgressWriter | None = None
    _progress_failed = False
    _holds: tuple[PhaseHold, ...] = ()  # tests only: the trainer's own held phases ($MEDPLAY_INJECT_HOLD)

    def _start_marks(self, output_dir: str) -> None:
        """Continue the run's record in `output_dir` (what the watchdog wrote as this attempt started)."""
        self._progress = ProgressWriter(progress_path(output_dir))
        self._holds = tuple(hold for hold in asked_holds() if hold.phase in TRAINER_PHASES)

    def _mark(self, phase: str) -> None:
        """Record that `phase` of the current step begins now."""
        if self._progress is None:
            return
        try:
            self._progress.enter(phase, self.global_steps)
        except OSError as error:
            if not self._progress_failed:
                log.warning("the progress record cannot be written (%s); training goes on", error)
            self._progress_failed = True
        for hold in self._holds:
            if hold.phase == phase:
                hold.at_step(self.global_steps)

    def on_sample_begin(self) -> None:
        """Generation and judging begin: the replay buffer waits for the step's games."""
        self._mark("generation")
        super().on_sample_begin()  # type: ignore[misc]

    def _compute_old_log_prob(self, batch: Any, metrics: dict) -> Any:
        """verl's old log-probabilities, marked."""
        self._mark("old_log_prob")
        return super()._compute_old_log_prob(batch, metrics)  # type: ignore[misc]

    def _compute_ref_log_prob(self, batch: Any, metrics: dict) -> Any:
        """verl's reference log-probabilities, marked."""
        self._mark("reference")
        return super()._compute_ref_log_prob(batch, metrics)  # type: ignore[misc]

    def _update_actor(self, batch: Any, metrics: dict) -> Any:
        """verl's actor update, marked."""
        self._mark("update")
        return super()._update_actor(batch, metrics)  # type: ignore[misc]
