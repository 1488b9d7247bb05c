"""verl's V1 synchronous trainer with the game's per-step metrics, registered as `medplay_sync`.

Select with `trainer.v1.trainer_mode=medplay_sync`. Every step logs, besides verl's own metrics,
every name of GAME.md (`medical_team.game.game_metrics` over the games the agent-loop workers
settled this step, dropped ties included), `samples/<role>`, the rows of each role in the update
batch, and with the learning probe on, `probe/<role>/behaviour_rate`. They reach every `trainer.logger`
backend through verl's Tracking.

It also wires in the reliability hooks (`medical_team.verl_ext.reliability`): the metrics JSONL is
appended to rather than truncated on restart, a checkpoint becomes the resume point only once its
step's metrics are written (a crash in between replays the step), a stop request (SIGTERM to the launcher) saves a
checkpoint and ends training after the current step, and `medplay.guards.max_non_finite_steps`
consecutive steps with a non-finite loss or reward stop the run, naming the last good checkpoint.
With a model judge, the gold probes the agent loops sent along are counted (`judge/gold_count`,
`judge/gold_accuracy`) and `medplay.judge.gold_accuracy_floor` stops the run once the step is logged.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from transfer_queue import KVBatchMeta
from verl.trainer.ppo.v1.trainer_base import register_trainer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

from medical_team.checkpoint_folder import read_tracker
from medical_team.game import game_metrics
from medical_team.judge.gold_probe import GoldFloor
from medical_team.judge.outage import JudgeUnavailableError
from medical_team.verl_ext.learning_probe import probe_metrics
from medical_team.verl_ext.reliability.checkpoints import StepCommits
from medical_team.verl_ext.reliability.graceful_stop import honour_stop_request
from medical_team.verl_ext.reliability.guards import NonFiniteGuard
from medical_team.verl_ext.reliability.metrics_file import use_appending_file_logger
from medical_team.verl_ext.roles import role_of_key
from medical_team.verl_ext.run_errors import NO_TRAJECTORIES, AllTiesError, all_ties_message
from medical_team.verl_ext.settings import settings_from_trainer_config
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

    def __init__(self, config: Any) -> None:
        """verl's sync trainer; `trainer.v1.trainer_mode` named this class, verl's code needs the mode it runs: sync.

        verl switches replay buffer, refill and resume behaviour on the literal mode "sync" and reads
        `trainer.v1.<mode>` for that mode's settings, so the config says "sync" from here on.
        """
        config.trainer.v1.trainer_mode = "sync"
        super().__init__(config)

    def step(self, metrics: dict[str, Any], timing_raw: dict[str, Any]) -> KVBatchMeta:
        """verl's step; when it fails because the judge was down or every game tied, raise that instead."""
        try:
            return super().step(metrics, timing_raw)
        except Exception as error:
            outages = self.agent_loop_manager.judge_outages()
            if outages:
                raise JudgeUnavailableError(outages[-1]) from error
            if NO_TRAJECTORIES in str(error):
                games, _ = self.agent_loop_manager.drain_games()
                if games and all(game.dropped for game in games):
                    parse_errors = sum(game.judge_parse_error for game in games)
                    raise AllTiesError(all_ties_message(self.global_steps, len(games), parse_errors)) from error
            raise

    def _compute_metrics(self, batch: KVBatchMeta, metrics: dict[str, Any], timing_raw, global_steps, epoch) -> None:
        """verl's metrics, then the step's game metrics and per-role sample counts."""
        super()._compute_metrics(batch, metrics, timing_raw, global_steps, epoch)
        outcomes, judge_stats = self.agent_loop_manager.drain_games()
        metrics.update(game_metrics(outcomes, judge_stats))
        if self._gold_floor is not None:
            metrics.update(self._gold_floor.observe(judge_stats.gold_count, judge_stats.gold_correct))
        metrics.update(sample_metrics(batch))
        metrics.update(probe_metrics(self.agent_loop_manager.drain_probe_observations()))
        self._non_finite_guard.observe(global_steps, metrics, self._last_checkpoint())

    def _last_checkpoint(self) -> str | None:
        """The checkpoint folder a resume would start from, if any."""
        root = Path(self.config.trainer.default_local_dir)
        step = read_tracker(root)
        return None if step is None else str(root / f"global_step_{step}")

    def fit(self, agent_loop_manager: Any) -> None:
        """verl's training loop, with the metrics JSONL opened for appending (a resumed run keeps earlier steps)."""
        use_appending_file_logger()
        self._non_finite_guard = NonFiniteGuard(max_consecutive=self.config.medplay.guards.max_non_finite_steps)
        judge = settings_from_trainer_config(self.config).judge
        self._gold_floor = GoldFloor(judge.gold_accuracy_floor, judge.gold_min_count) if judge.probed else None
        super().fit(agent_loop_manager)

    def on_train_begin(self) -> None:
        """verl's hook, then commit each saved checkpoint only after its step's metrics are logged."""
        super().on_train_begin()
        self._commits = StepCommits(Path(self.config.trainer.default_local_dir))
        log_metrics = self.logger.log

        def log_then_commit(data: dict[str, Any], step: int, backend: Any = None) -> None:
            log_metrics(data=data, step=step, backend=backend)
            self._commits.commit()
            if self._gold_floor is not None:  # after the step's metrics are written, so the cause is on record
                self._gold_floor.check(step)

        self.logger.log = log_then_commit

    def _save_checkpoint(self) -> None:
        """verl's save; the tracker moves to this step once the step's metrics are written (StepCommits)."""
        previous = read_tracker(Path(self.config.trainer.default_local_dir))
        super()._save_checkpoint()
        self._commits.saved(self.global_steps, previous)

    def on_step_end(self) -> None:
        """verl's weight sync, then honour a stop request (save unless this step already saved, then finish)."""
        super().on_step_end()
        save_freq = self.config.trainer.save_freq
        is_last_step = self.global_steps >= self.total_training_steps
        saved = save_freq > 0 and (is_last_step or self.global_steps % save_freq == 0)
        honour_stop_request(self, Path(self.config.trainer.default_local_dir), saved_this_step=saved)
