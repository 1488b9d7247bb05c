"""The run's config as the trackers record it (wandb's run config, among others), secret-named values redacted.

verl's `fit` builds `Tracking(..., config=<the whole resolved config>)`, and wandb uploads that config with the
run. In the trainer process `trainer_base.Tracking` becomes this subclass, which hands the trackers the config
with `medical_team.run.redaction` applied; the trainer keeps the real values.
"""

from __future__ import annotations

from typing import Any

from verl.trainer.ppo.v1 import trainer_base
from verl.utils.tracking import Tracking

from medical_team.run.redaction import redacted


class RedactingTracking(Tracking):
    """verl's `Tracking`, given the run's config with its secret-named values redacted."""

    def __init__(self, *args: Any, config: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, config=redacted(config), **kwargs)


def use_redacting_tracking() -> None:
    """Make verl's trainer build `RedactingTracking` (call in the trainer process)."""
    trainer_base.Tracking = RedactingTracking
