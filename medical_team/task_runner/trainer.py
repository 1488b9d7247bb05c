"""verl's V1 synchronous trainer with the game's per-step metrics, registered as `medplay_sync`.

Select with `trainer.v1.trainer_mode=medplay_sync`. Every step logs, besides verl's own metrics,
every name of docs/game.md's "Metrics" (`medical_team.game.game_metrics` over the games the agent-loop workers
settled this step, dropped ties included), `samples/<role>`, the rows of each role in the update
batch, and with the learning probe on, `probe/<role>/behaviour_rate`. They reach every `trainer.logger`
backend through verl's Tracking.

It also wires in the reliability hooks (medical_team/reliability/, graceful_stop.py, metrics_file.py, game_records_file.py): the metrics JSONL is
appended to rather than truncated on restart, a checkpoint becomes the resume point only once its
step's metrics are on disk (a crash in between replays the step; a metrics record that cannot be written whole
ends the run with the step uncommitted), a stop request (SIGTERM to the launcher) saves a
checkpoint and ends training after the current step, and `medplay.guards.max_non_finite_steps`
consecutive steps with a non-finite loss or reward stop the run, naming the last good checkpoint.
With a model judge, the gold probes the agent loops sent along are counted (`judge/gold_count`,
`judge/gold_accuracy`) and `medplay.judge.gold_accuracy_floor` stops the run once the step is logged.

Every step also writes `medplay.report.games_per_step` of its games, with their texts, to `games/step_<N>.jsonl`
beside the metrics file before the step is committed (`medical_team.game.game_records`, for `medplay report`).

Every step also logs the collapse monitors (`medical_team.game.monitors`) and, per configured alarm,
`alarm/<name>` (steps in a row past its threshold); an alarm that fires is logged as a warning, and
with `medplay.monitors.action=stop` the step's checkpoint is saved and the run ends after the step,
as on a stop request.

Every step also logs the run's resources (`resources/...`: host memory, the run's processes, `/dev/shm`, the
checkpoint volume; medical_team/task_runner/resource_record.py); when host memory or the volume's free space is at its
floor (`medplay.resources`), the step's checkpoint is saved, the run ends after the step, and `fit` raises
`ResourceFloorError` (exit status 6) once verl's loop has finished.

The step-level reward terms (format against answers of the same kind, the verdict balance, `difficulty_band`'s
attacker outcome) are added to the rows before the advantages are computed (`medical_team.task_runner.step_rewards`),
and the game metrics read the games with them.

A LoRA actor's checkpoint is split into its PEFT adapter and a merged Hugging Face model after verl's
save (`medical_team.task_runner.lora_export`), before the checkpoint can become the resume point.
`trainer.max_actor_ckpt_to_keep` is medplay's to apply, once a step is committed (`medical_team.reliability.retention`):
verl's save sees it null, so verl's worker deletes nothing (`verl_view`).

A validation on the benchmark (`data.val_files` = `benchmark.parquet`) writes each note's response to
`<medplay.validation_dir>/step_<N>/` for `medplay eval --responses` to score
(`medical_team.run.benchmark_validation`, `medical_team.run_folder.benchmark_answers`). A run that validates
(`trainer.test_freq` > 0) and ends before its step cap (a stop request, an alarm) validates the step it ended on
before it finishes, as verl does for the last step.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from transfer_queue import KVBatchMeta
from verl.trainer.ppo.v1.trainer_base import register_trainer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

from medical_team.common.vocab import Role
from medical_team.game import GameOutcome, JudgeStats, game_metrics
from medical_team.game.alarm import AlarmAction, CollapseAlarm
from medical_team.game.game_records import games_folder, step_records
from medical_team.game.monitors import collapse_monitors
from medical_team.game.step_terms import with_step_terms
from medical_team.judge.gold_probe import GoldFloor
from medical_team.judge.outage import JudgeUnavailableError
from medical_team.reliability.guards import NonFiniteGuard
from medical_team.reliability.step_commits import StepCommits
from medical_team.run.benchmark_validation import benchmark_file, decoding_of
from medical_team.run.failures import NO_TRAJECTORIES, AllTiesError, ResourceFloorError, all_ties_message
from medical_team.run.learning_probe import probe_metrics
from medical_team.run.replay_poll_interval import REPLAY_POLL_S
from medical_team.run.roles import role_of_key
from medical_team.run.settings import settings_from_trainer_config
from medical_team.run.step_games import StepGame
from medical_team.run_folder.benchmark_answers import STEP_FOLDER, generation_record, write_benchmark_answers
from medical_team.run_folder.checkpoint_folder import last_checkpoint, read_tracker
from medical_team.task_runner.game_records_file import write_step_records
from medical_team.task_runner.graceful_stop import end_after_this_step, honour_stop_request
from medical_team.task_runner.lora_export import export_lora
from medical_team.task_runner.metrics_file import use_appending_file_logger
from medical_team.task_runner.phase_marks import PhaseMarks
from medical_team.task_runner.resource_record import ResourceRecord
from medical_team.task_runner.step_rewards import add_to_row_rewards, step_deltas
from medical_team.task_runner.tracking_config import use_redacting_tracking

TRAINER_NAME = "medplay_sync"
KEEP_KEY = "max_actor_ckpt_to_keep"  # of `trainer:`; verl's `_save_checkpoint` reads it at every save


def in_row_order(batch: KVBatchMeta) -> KVBatchMeta:
    """The batch's rows by data row index, then role, game of the row and output.

    TransferQueue lists rows in the order their games finished, which varies from run to run; the
    update's micro-batches, padding and sums follow that order, and Adam turns their rounding into
    different weights. A fixed order makes a seeded run repeat itself.
    """
    import transfer_queue as tq

    column = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=["index"])["index"]
    indices = [int(getattr(value, "data", value)) for value in column]
    # a row key is `<prompt uid>_<role>_<game>_<output>`; the prompt uid is random, the rest is not
    order = sorted(range(len(batch.keys)), key=lambda i: (indices[i], batch.keys[i].split("_", 1)[1]))
    return dataclasses.replace(batch, keys=[batch.keys[i] for i in order], tags=[batch.tags[i] for i in order])


log = logging.getLogger(__name__)


def sample_metrics(batch: KVBatchMeta) -> dict[str, float]:
    """`samples/<role>`: how many rows of each role the update batch holds (verl's padding rows excluded)."""
    counts = Counter(
        role_of_key(key) for key, tag in zip(batch.keys, batch.tags, strict=True) if not tag.get("is_padding", False)
    )
    return {f"samples/{role.value}": float(counts[role]) for role in Role}


def verl_view(config: DictConfig) -> DictConfig:
    """The copy of the bound config verl's trainer reads: the mode it runs, and no retention of its own.

    verl switches replay buffer, refill and resume behaviour on the literal mode "sync" and reads `trainer.v1.<mode>`
    for that mode's settings, so its copy says "sync". verl's worker deletes old `actor/` folders inside the save,
    before the new step is committed, and leaves the rest of each step folder behind; medplay removes whole folders
    after the commit instead (StepCommits), so its copy's `trainer.max_actor_ckpt_to_keep` is null. The config handed
    in stays as it was bound.
    """
    return OmegaConf.merge(config, {"trainer": {"v1": {"trainer_mode": "sync"}, KEEP_KEY: None}})


@register_trainer(TRAINER_NAME)
class SelfPlayTrainer(PhaseMarks, PPOTrainerSync):
    """PPOTrainerSync that adds the game metrics to every step's metrics and marks each phase of a step."""

    def __init__(self, config: Any) -> None:
        """verl's sync trainer on `verl_view(config)`; medplay keeps `trainer.max_actor_ckpt_to_keep` to apply itself."""
        self._keep = config.trainer.get(KEEP_KEY)  # applied to whole step folders once a step is committed
        config = verl_view(config)
        super().__init__(config)
        self.settings = settings_from_trainer_config(config)
        # the learning probe replaces the game's rewards, step-level terms included
        self._step_terms = not self.settings.learning_probe.enabled
        self._alarm = CollapseAlarm(self.settings.monitors.rules, self.settings.monitors.patience)
        self._step_games: list[StepGame] = []
        self._step_judge_stats = JudgeStats()
        self._saved_step: int | None = None  # the step of the last checkpoint saved
        self._validated_step: int | None = None  # the step of the last validation
        self._resource_stop: str | None = None  # the line a run ended at a resource floor ends with

    def _build_replay_buffer(self) -> Any:
        """verl's replay buffer, looking for finished games every `REPLAY_POLL_S` seconds."""
        buffer = super()._build_replay_buffer()
        buffer.poll_interval = REPLAY_POLL_S
        return buffer

    def step(self, metrics: dict[str, Any], timing_raw: dict[str, Any]) -> KVBatchMeta:
        """verl's step; when it fails because the judge was down or every game tied, raise that instead."""
        try:
            return super().step(metrics, timing_raw)
        except Exception as error:
            outages = self.agent_loop_manager.judge_outages()
            if outages:
                raise JudgeUnavailableError(outages[-1]) from error
            if NO_TRAJECTORIES in str(error):
                self._take_games()
                games = [game.outcome for game in self._step_games]
                if games and all(game.dropped for game in games):
                    parse_errors = sum(game.judge_parse_error for game in games)
                    raise AllTiesError(all_ties_message(self.global_steps, len(games), parse_errors)) from error
            raise

    def _balance_batch(self, batch: KVBatchMeta, metrics: dict[str, Any], *args: Any, **kwargs: Any) -> KVBatchMeta:
        """verl's balancing; under `medplay.seeded_sampling` of the rows in data-row order, not finishing order."""
        if self.settings.seeded_sampling:
            batch = in_row_order(batch)
        return super()._balance_batch(batch, metrics, *args, **kwargs)

    def _compute_metrics(self, batch: KVBatchMeta, metrics: dict[str, Any], timing_raw, global_steps, epoch) -> None:
        """verl's metrics, then the step's game metrics and per-role sample counts."""
        self._mark("metrics")
        super()._compute_metrics(batch, metrics, timing_raw, global_steps, epoch)
        self._take_games()
        games, judge_stats = self._step_games, self._step_judge_stats
        self._step_games, self._step_judge_stats = [], JudgeStats()
        outcomes = [game.outcome for game in games]
        if self._step_terms:
            outcomes = with_step_terms(outcomes, self.settings.rewards)
        metrics.update(game_metrics(outcomes, judge_stats))
        self._record_games(global_steps, outcomes, games)
        if self._gold_floor is not None:
            metrics.update(self._gold_floor.observe(judge_stats.gold_count, judge_stats.gold_correct))
        metrics.update(sample_metrics(batch))
        metrics.update(probe_metrics(self.agent_loop_manager.drain_probe_observations()))
        self._observe_monitors(global_steps, outcomes, games, metrics)
        self._observe_resources(global_steps, metrics)
        self._non_finite_guard.observe(global_steps, metrics, self._last_checkpoint())

    def _record_games(self, step: int, outcomes: list[GameOutcome], games: list[StepGame]) -> None:
        """Write `medplay.report.games_per_step` of the step's games with their texts, before the step is committed."""
        limit = self.settings.report.games_per_step
        if limit:
            records = step_records(step, outcomes, [game.trace for game in games], limit)
            write_step_records(games_folder(self.settings.metrics_file), step, records)

    def _take_games(self) -> None:
        """Add the games the workers settled since the last call to this step's games."""
        games, judge_stats = self.agent_loop_manager.drain_games()
        self._step_games.extend(games)
        self._step_judge_stats = self._step_judge_stats.merge(judge_stats)

    def _compute_advantage(self, batch: KVBatchMeta, metrics: dict[str, Any]) -> KVBatchMeta:
        """verl's advantages, after adding the step-level reward terms to the rows."""
        self._mark("advantage")
        if self._step_terms:
            self._take_games()
            add_to_row_rewards(batch.keys, batch.partition_id, step_deltas(self._step_games, self.settings.rewards))
        return super()._compute_advantage(batch, metrics)

    def _observe_monitors(
        self, step: int, outcomes: list[GameOutcome], games: list[StepGame], metrics: dict[str, Any]
    ) -> None:
        """Log the collapse monitors and the alarm's runs; a firing alarm warns, and with `stop` ends the run."""
        traced = [(outcome, game.trace) for outcome, game in zip(outcomes, games, strict=True) if game.trace]
        reading = collapse_monitors(
            [outcome for outcome, _ in traced],
            [trace for _, trace in traced],
            self.settings.monitors.self_bleu_max_rewrites,
        )
        metrics.update(reading.values)
        fired = self._alarm.observe(reading)
        metrics.update(self._alarm.streak_metrics())
        action = self.settings.monitors.action
        for firing in fired:
            log.warning(firing.message(step, action))
        if fired and action is AlarmAction.STOP:
            end_after_this_step(self, self._saved_this_step(), f"collapse alarm {fired[0].rule.name}")

    def _observe_resources(self, step: int, metrics: dict[str, Any]) -> None:
        """Log the step's `resources/...`; at a floor, save and end the run after the step, which `fit` then raises."""
        values, stop = self._resources.observe(step, self.total_training_steps)
        metrics.update(values)
        if stop is not None:
            log.warning(stop)
            self._resource_stop = stop
            end_after_this_step(self, self._saved_this_step(), "resource floor")

    def _validate(self) -> dict[str, float]:
        """verl's validation; the answers it gave on benchmark rows are written for `medplay eval --responses`."""
        self._mark("validation")
        started = time.perf_counter()
        metrics = super()._validate()
        seconds = time.perf_counter() - started
        self._validated_step = self.global_steps
        answers = self.agent_loop_manager.drain_benchmark_answers()
        if answers:
            self._write_benchmark_answers(answers, seconds)
        return metrics

    def _write_benchmark_answers(self, answers: list[dict[str, str]], seconds: float) -> None:
        """This validation's benchmark answers, with how they were made, in this step's folder."""
        rollout = self.config.actor_rollout_ref.rollout
        start = self.config.actor_rollout_ref.model.path
        about = {
            "benchmark": benchmark_file(self.config.data.val_files),
            "model": f"{start}, trained {self.global_steps} steps" if self.global_steps else start,
            "backend": "verl validation",
            "step": self.global_steps,
            "generation": generation_record(
                int(rollout.response_length), None, False, decoding_of(rollout.val_kwargs), seconds, len(answers)
            ),
        }
        folder = Path(self.settings.validation_dir) / STEP_FOLDER.format(step=self.global_steps)
        write_benchmark_answers(answers, folder, about)
        log.warning("benchmark validation at step %s: %d answers in %s", self.global_steps, len(answers), folder)

    def on_train_end(self) -> None:
        """verl's hook; a validating run that ended before its step cap first validates the step it ended on, unless
        a resource floor ended it (a validation would use up more of what ran short)."""
        last_step = self.global_steps - 1
        validate = self.config.trainer.test_freq > 0 and last_step > 0 and self._validated_step != last_step
        if validate and self._resource_stop is None:
            # verl's loop has moved to the next step; validation tags its rows and this step's folder by global_steps
            self.global_steps = last_step
            self.on_validate_begin()
            metrics = self._validate()
            self.on_validate_end()
            self.logger.log(data=metrics, step=last_step)
            self.global_steps = last_step + 1
        super().on_train_end()

    def _last_checkpoint(self) -> str | None:
        """The checkpoint folder a resume would start from, if any."""
        return last_checkpoint(Path(self.config.trainer.default_local_dir))

    def fit(self, agent_loop_manager: Any) -> None:
        """verl's training loop, with the metrics JSONL opened for appending (a resumed run keeps earlier steps) and
        the trackers given the config with its secrets redacted; a run a resource floor ended raises its line after."""
        use_appending_file_logger()
        use_redacting_tracking()
        self._start_marks(self.settings.output_dir)
        self._non_finite_guard = NonFiniteGuard(max_consecutive=self.settings.guards.max_non_finite_steps)
        judge = self.settings.judge
        self._gold_floor = GoldFloor(judge.gold_accuracy_floor, judge.gold_min_count) if judge.probed else None
        self._resources = ResourceRecord(
            self.settings.resources, Path(self.config.trainer.default_local_dir), Path(self.settings.output_dir)
        )
        super().fit(agent_loop_manager)
        if self._resource_stop is not None:  # the step's checkpoint is saved and committed: end with the cause
            raise ResourceFloorError(self._resource_stop)

    def on_train_begin(self) -> None:
        """verl's hook, then commit each saved checkpoint only after its step's metrics are logged."""
        super().on_train_begin()
        self._commits = StepCommits(Path(self.config.trainer.default_local_dir), keep=self._keep)
        log_metrics = self.logger.log

        def log_then_commit(data: dict[str, Any], step: int, backend: Any = None) -> None:
            # The file logger returns once the record is fsynced and raises MetricsWriteError when it could not
            # write it whole: then nothing is committed and the tracker stays at the checkpoint before.
            log_metrics(data=data, step=step, backend=backend)
            self._commits.commit()
            if self._gold_floor is not None:  # after the step's metrics are written, so the cause is on record
                self._gold_floor.check(step)

        self.logger.log = log_then_commit

    def _save_checkpoint(self) -> None:
        """verl's save without verl's retention, the tracker held back (StepCommits), then a LoRA actor's export.

        The marker an earlier save of this step left goes first (a resumed run saves that step again); the tracker
        moves to this step once the step's metrics are on disk, and old checkpoints go only then (StepCommits).
        """
        self._mark("checkpoint_save")
        root = Path(self.config.trainer.default_local_dir)
        previous = read_tracker(root)
        self._commits.saving(self.global_steps)
        super()._save_checkpoint()
        self._saved_step = self.global_steps
        self._commits.saved(self.global_steps, previous)  # first: a crash in the export resumes from `previous`
        export_lora(root / f"global_step_{self.global_steps}" / "actor", self.config.actor_rollout_ref.model.path)

    def on_step_end(self) -> None:
        """verl's weight sync, then honour a stop request (save unless this step already saved, then finish)."""
        self._mark("weight_sync")
        super().on_step_end()
        honour_stop_request(self, Path(self.config.trainer.default_local_dir), saved_this_step=self._saved_this_step())

    def _saved_this_step(self) -> bool:
        """Whether a checkpoint of this step was saved (by verl's loop, before `on_step_end`, or by a stop)."""
        return self._saved_step == self.global_steps
