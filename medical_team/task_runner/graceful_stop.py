"""The trainer's half of the graceful stop: on a stop request, save a checkpoint and end after this step.

The launcher's SIGTERM handler (medical_team/launcher/graceful_stop.py) writes the stop request
(medical_team/reliability/stop_request.py); the trainer looks for it after every step (`honour_stop_request`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from medical_team.reliability.stop_request import stop_requested

log = logging.getLogger(__name__)


def honour_stop_request(trainer: Any, checkpoint_root: Path, saved_this_step: bool) -> bool:
    """Called by the trainer after each step: on a stop request, save (unless just saved) and end the loop."""
    if not stop_requested(checkpoint_root):
        return False
    end_after_this_step(trainer, saved_this_step, "stop requested")
    return True


def end_after_this_step(trainer: Any, saved_this_step: bool, reason: str) -> None:
    """Save a checkpoint of the current step (unless just saved) and make this step the last one.

    Ending the loop by lowering `total_training_steps` lets verl's own `fit` finish normally
    (loggers closed, `on_train_end` run) instead of unwinding through an exception.
    """
    if not saved_this_step:
        trainer._save_checkpoint()
    log.warning("%s: checkpoint global_step_%s saved, ending training", reason, trainer.global_steps)
    trainer.total_training_steps = trainer.global_steps
