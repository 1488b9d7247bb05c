"""Guard rails on training metrics: stop after N consecutive steps with a non-finite loss or reward."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass


class NonFiniteTrainingError(RuntimeError):
    """Training produced non-finite losses or rewards for too many consecutive steps."""


def _watched(key: str) -> bool:
    """Loss, gradient-norm and reward metrics: the ones that must stay finite."""
    return key.endswith(("loss", "grad_norm", "reward_mean")) or key.startswith(("critic/rewards/", "critic/score/"))


def non_finite_keys(metrics: Mapping[str, object]) -> list[str]:
    """The watched metrics of one step whose value is NaN or infinite."""
    bad = []
    for key, value in metrics.items():
        if _watched(key) and isinstance(value, int | float) and not math.isfinite(value):
            bad.append(key)
    return sorted(bad)


@dataclass
class NonFiniteGuard:
    """Counts consecutive steps with non-finite watched metrics and raises after `max_consecutive`."""

    max_consecutive: int
    consecutive: int = 0

    def observe(self, step: int, metrics: Mapping[str, object], last_checkpoint: str | None) -> None:
        """Feed one step's metrics; raise NonFiniteTrainingError when the limit is reached."""
        bad = non_finite_keys(metrics)
        self.consecutive = self.consecutive + 1 if bad else 0
        if bad and self.consecutive >= self.max_consecutive:
            resume = last_checkpoint or "none saved yet"
            raise NonFiniteTrainingError(
                f"step {step}: non-finite {', '.join(bad)} for {self.consecutive} consecutive steps "
                f"(limit medplay.guards.max_non_finite_steps={self.max_consecutive}); "
                f"last good checkpoint: {resume}. Lower the learning rate or check the reward, then resume."
            )
