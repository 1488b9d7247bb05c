"""verl's V1 synchronous trainer with the game's per-step metrics, registered as `medplay_sync`.

Select with `trainer.v1.trainer_mode=medplay_sync`. Every step logs, besides verl's own metrics,
every name of GAME.md (`medical_team.game.game_metrics` over the games the agent-loop workers
settled this step, dropped ties included) and `samples/<role>`, the rows of each role in the
update batch. They reach every `trainer.logger` backend through verl's Tracking.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from transfer_queue import KVBatchMeta
from verl.trainer.ppo.v1.trainer_base import register_trainer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

from medical_team.game import game_metrics
from medical_team.verl_ext.roles import role_of_key
from medical_team.vocab import Role

TRAINER_NAME = "medplay_sync"


def sample_metrics(batch: KVBatchMeta) -> dict[str, float]:
    """`samples/<role>`: how many rows of each role the update batch holds (verl's padding rows excluded)."""
    counts = Counter(
        role_of_key(key) for key, tag in zip(batch.keys, batch.tags, strict=True) if not tag.get("is_padding", False)
    )
    return {f"samples/{role.value}": float(counts[role]) for role in Role}


@register_trainer(TRAINER_NAME)
class SelfPlayTrainer(PPOTrainerSync):
    """PPOTrainerSync that adds the game metrics to every step's metrics."""

    # verl switches replay buffer, refill and resume behaviour on the literal mode name "sync";
    # this trainer is that mode under its own registry name, so it always reports "sync".
    trainer_mode = property(lambda self: "sync", lambda self, _value: None)

    def _compute_metrics(self, batch: KVBatchMeta, metrics: dict[str, Any], timing_raw, global_steps, epoch) -> None:
        """verl's metrics, then the step's game metrics and per-role sample counts."""
        super()._compute_metrics(batch, metrics, timing_raw, global_steps, epoch)
        outcomes, judge_stats = self.agent_loop_manager.drain_games()
        metrics.update(game_metrics(outcomes, judge_stats))
        metrics.update(sample_metrics(batch))
