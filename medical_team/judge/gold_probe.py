"""Gold probes during training: gold items mixed into the judge's requests, scored, and a floor that stops the run."""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from medical_team.game.judging import JudgeVerdict
from medical_team.judge.gold import GoldItem

# Copies of the seed are settled by a rule before any model sees them: probing with them measures nothing.
PROBE_KINDS: tuple[str, ...] = ("injected_error", "removed_error", "truncated", "off_topic")


class JudgeGoldFloorError(RuntimeError):
    """The judge answered too few gold probes right: its verdicts cannot be trusted to settle games."""


class GoldProbes:
    """Hands out gold items at `fraction` per judged game (a running share, so 0.25 is one probe every 4 games)."""

    def __init__(self, items: Sequence[GoldItem], fraction: float, seed: int = 0) -> None:
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"gold probe fraction must be in [0, 1], got {fraction}")
        self.items = [item for item in items if item.kind in PROBE_KINDS]
        if not self.items:
            raise ValueError("no gold items to probe the judge with")
        random.Random(seed).shuffle(self.items)
        self.fraction = fraction
        self._due = 0.0
        self._next = 0
        self._lock = threading.Lock()

    def draw(self, games: int = 1) -> list[GoldItem]:
        """The gold items to send along with the requests of `games` games (usually none or one)."""
        with self._lock:
            self._due += self.fraction * games
            count = int(self._due)
            self._due -= count
            drawn = [self.items[(self._next + i) % len(self.items)] for i in range(count)]
            self._next = (self._next + count) % len(self.items)
            return drawn


def count_correct(items: Sequence[GoldItem], verdicts: Sequence[JudgeVerdict]) -> int:
    """How many verdicts give both known answers (`error_present` and `faithful`); a tie is wrong."""
    return sum(item.correct(verdict) for item, verdict in zip(items, verdicts, strict=True))


@dataclass
class GoldFloor:
    """Running gold accuracy of a run; `check` raises once `min_count` probes are in and accuracy is below `floor`."""

    floor: float
    min_count: int
    count: int = 0
    correct: int = 0

    def observe(self, count: int, correct: int) -> dict[str, float]:
        """Add one step's probes; `judge/gold_count` and (once there are probes) `judge/gold_accuracy`, cumulative."""
        self.count += count
        self.correct += correct
        metrics = {"judge/gold_count": float(self.count)}
        if self.count:
            metrics["judge/gold_accuracy"] = self.correct / self.count
        return metrics

    def check(self, step: int) -> None:
        """Raise `JudgeGoldFloorError` when enough probes were judged and too few were right."""
        if self.count < self.min_count or self.floor <= 0:
            return
        accuracy = self.correct / self.count
        if accuracy < self.floor:
            raise JudgeGoldFloorError(
                f"step {step}: judge gold accuracy {accuracy:.3f} over {self.count} gold probes is below "
                f"medplay.judge.gold_accuracy_floor={self.floor}; the judge's verdicts cannot be trusted: "
                "audit it (medplay judge audit) or use a stronger judge model"
            )
