"""The collapse alarm: fires when a monitor stays past its threshold for `patience` steps in a row.

Each alarm is named by its setting, `min_<monitor>` (fires below the threshold) or `max_<monitor>`
(fires above it); `ALARMS` maps every name onto the monitor it watches. What a firing does (a
warning, or a clean stop) is the trainer's business; this module only counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from medical_team.game.monitors import MonitorReading

# alarm name -> (monitor, fires when above the threshold)
ALARMS: dict[str, tuple[str, bool]] = {
    "min_distinct_1": ("attacker/distinct_1", False),
    "min_distinct_2": ("attacker/distinct_2", False),
    "max_self_bleu": ("attacker/self_bleu", True),
    "min_edit_distance": ("attacker/edit_distance", False),
    "max_copy_rate": ("attacker/copy_rate", True),
    "min_attacker_length": ("attacker/response_length/mean", False),
    "max_attacker_clip_rate": ("attacker/response_length/clip_rate", True),
    "min_assessor_length": ("assessor/response_length/mean", False),
    "max_assessor_clip_rate": ("assessor/response_length/clip_rate", True),
    "max_majority_verdict_share": ("assessor/majority_verdict_share", True),
    "min_error_verdict_share": ("assessor/error_verdict_share", False),
    "max_error_verdict_share": ("assessor/error_verdict_share", True),
}
STREAK_PREFIX = "alarm/"  # `alarm/<name>`: steps in a row the alarm's monitor has been past its threshold


class AlarmAction(str, Enum):
    """What a firing alarm does."""

    WARN = "warn"  # a console line each step the alarm fires
    STOP = "stop"  # the console line, then save a checkpoint and end the run after this step


@dataclass(frozen=True)
class AlarmRule:
    """One configured alarm: the monitor it watches, its threshold and direction."""

    name: str
    threshold: float

    @property
    def monitor(self) -> str:
        """The monitor's metric name."""
        return ALARMS[self.name][0]

    @property
    def above(self) -> bool:
        """True when values above the threshold are the collapse."""
        return ALARMS[self.name][1]

    def past(self, value: float) -> bool:
        """Whether `value` is on the collapse side of the threshold (strictly)."""
        return value > self.threshold if self.above else value < self.threshold


@dataclass(frozen=True)
class AlarmFiring:
    """An alarm whose monitor has been past its threshold for at least `patience` steps."""

    rule: AlarmRule
    value: float
    steps: int

    def message(self, step: int, action: AlarmAction) -> str:
        """One console line naming the monitor, its value, the threshold and the setting that holds it."""
        side = "above" if self.rule.above else "below"
        then = "saving a checkpoint and stopping the run" if action is AlarmAction.STOP else "training goes on"
        return (
            f"medplay: collapse alarm at step {step}: {self.rule.monitor} = {self.value:.3g}, {side} "
            f"{self.rule.threshold:g} (medplay.monitors.alarms.{self.rule.name}) for {self.steps} steps in a row; {then}"
        )


def alarm_rules(thresholds: Mapping[str, float | None]) -> list[AlarmRule]:
    """The alarms whose threshold is set (None turns one off); an unknown name is a ValueError."""
    unknown = sorted(set(thresholds) - set(ALARMS))
    if unknown:
        raise ValueError(f"unknown alarm(s) {', '.join(unknown)}; known: {', '.join(ALARMS)}")
    return [AlarmRule(name, float(value)) for name, value in thresholds.items() if value is not None]


class CollapseAlarm:
    """Counts, per alarm, the consecutive steps its monitor was past its threshold.

    A step in which a monitor was not measured (too few games for it) neither counts nor breaks
    the run of steps.
    """

    def __init__(self, rules: list[AlarmRule], patience: int) -> None:
        if patience < 1:
            raise ValueError(f"patience must be at least 1, got {patience}")
        self.rules = rules
        self.patience = patience
        self.streak = {rule.name: 0 for rule in rules}

    def observe(self, reading: MonitorReading) -> list[AlarmFiring]:
        """Feed one step's reading; return the alarms that fire at this step."""
        fired = []
        for rule in self.rules:
            if rule.monitor not in reading.measured:
                continue
            value = reading.values[rule.monitor]
            self.streak[rule.name] = self.streak[rule.name] + 1 if rule.past(value) else 0
            if self.streak[rule.name] >= self.patience:
                fired.append(AlarmFiring(rule, value, self.streak[rule.name]))
        return fired

    def streak_metrics(self) -> dict[str, float]:
        """`alarm/<name>`: the current run of steps past the threshold, for every configured alarm."""
        return {f"{STREAK_PREFIX}{name}": float(steps) for name, steps in self.streak.items()}
