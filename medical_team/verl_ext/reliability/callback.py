"""verl checkpoint callback that marks each finished save complete (`trainer.checkpoint_callback_class`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verl.trainer.ppo.checkpoint_callback import CheckpointCallback

from medical_team.verl_ext.reliability.checkpoints import mark_complete


class CompleteCheckpointCallback(CheckpointCallback):
    """Writes the completion marker into `global_step_N` once verl's save of that step has returned."""

    def on_save(self, trainer: Any, global_step: int, checkpoint_dir: str, async_save: bool = False, **kwargs) -> None:
        """Mark a synchronous save complete; an asynchronous one is not durable yet, so it stays unmarked."""
        if not async_save:
            mark_complete(Path(checkpoint_dir), global_step)
