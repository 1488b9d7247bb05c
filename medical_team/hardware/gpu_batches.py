"""A step's batches across the policy's GPUs: games per step scaled with them, and every split verl asserts checked.

verl 0.9.1 splits each PPO mini-batch evenly over the data-parallel ranks and each rank's share into micro-batches,
and starts one vLLM rollout replica per `tensor_model_parallel_size` GPUs; a number that does not divide fails
by an assert, some of them only in the first step's update. `batch_problems` mirrors those asserts before any work,
each mismatch named with its fix:

- verl/utils/config.py `validate_config`: without dynamic batches, train_batch_size x rollout.n divisible by the GPUs;
- verl/workers/config/actor.py `ActorConfig.validate`: without dynamic batches, train_batch_size >= ppo_mini_batch_size;
- verl/workers/engine_workers.py `train_mini_batch`: ppo_mini_batch_size x rollout.n divisible by the data-parallel
  ranks (GPUs / ulysses_sequence_parallel_size);
- verl/workers/engine/utils.py `prepare_micro_batches`: without dynamic batches, each rank's share divisible by
  its micro-batch (the update's ppo_micro_batch_size_per_gpu; the old and reference log-probs'
  log_prob_micro_batch_size_per_gpu, over the batch verl pads to a multiple of the mini-batch,
  trainer/ppo/v1/trainer_base.py `_get_required_batch_multiple`);
- verl/workers/engine_workers.py (the rollout's device mesh): the GPUs divisible by tensor x data x pipeline parallel.

Pure arithmetic over a composed config as a plain nested dict (plan_inputs.config_value); tests/test_verl_contracts.py
fails when verl's asserts change.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from medical_team.hardware.plan_inputs import config_value

ARR = "actor_rollout_ref"
TRAIN_BATCH_KEY = "data.train_batch_size"
MINI_BATCH_KEY = f"{ARR}.actor.ppo_mini_batch_size"
# The profile's games per step are for one GPU: both scale with the policy's GPUs unless the run names either.
SCALED_KEYS = (TRAIN_BATCH_KEY, MINI_BATCH_KEY)
MICRO_BATCH_KEY = f"{ARR}.actor.ppo_micro_batch_size_per_gpu"
ROLLOUT_MICRO_KEY = f"{ARR}.rollout.log_prob_micro_batch_size_per_gpu"
REF_MICRO_KEY = f"{ARR}.ref.log_prob_micro_batch_size_per_gpu"
TENSOR_PARALLEL_KEY = f"{ARR}.rollout.tensor_model_parallel_size"
SEQUENCE_PARALLEL_KEY = f"{ARR}.actor.ulysses_sequence_parallel_size"


@dataclass(frozen=True)
class BatchSettings:
    """verl's batch and parallelism settings that the policy's GPU count must divide."""

    train_batch_size: int
    rollout_n: int
    ppo_mini_batch_size: int
    dynamic: bool  # actor.use_dynamic_bsz: token-packed micro-batches (the update's and the old log-probs')
    micro_batch: int | None  # MICRO_BATCH_KEY
    rollout_micro_batch: int | None  # ROLLOUT_MICRO_KEY (the old log-probs, the actor's engine)
    ref_dynamic: bool  # ref.log_prob_use_dynamic_bsz
    ref_micro_batch: int | None  # REF_MICRO_KEY
    needs_reference: bool
    sequence_parallel: int
    rollout_parallel: int  # GPUs of one rollout replica: tensor x data x pipeline parallel

    @property
    def games(self) -> int:
        """Games per step: seed rows x games per row."""
        return self.train_batch_size * self.rollout_n


def _count(value: object) -> int | None:
    """A count of the config, None where it is unset."""
    return None if value is None else int(value)


def batch_settings(config: Mapping) -> BatchSettings:
    """The batch settings of a composed config (a plain nested dict)."""
    actor, rollout = f"{ARR}.actor", f"{ARR}.rollout"
    sequence = max(int(config_value(config, SEQUENCE_PARALLEL_KEY)),
                   int(config_value(config, f"{actor}.fsdp_config.ulysses_sequence_parallel_size")))  # fmt: skip
    return BatchSettings(
        train_batch_size=int(config_value(config, TRAIN_BATCH_KEY)),
        rollout_n=int(config_value(config, f"{rollout}.n")),
        ppo_mini_batch_size=int(config_value(config, MINI_BATCH_KEY)),
        dynamic=bool(config_value(config, f"{actor}.use_dynamic_bsz")),
        micro_batch=_count(config_value(config, MICRO_BATCH_KEY)),
        rollout_micro_batch=_count(config_value(config, ROLLOUT_MICRO_KEY)),
        ref_dynamic=bool(config_value(config, f"{ARR}.ref.log_prob_use_dynamic_bsz")),
        ref_micro_batch=_count(config_value(config, REF_MICRO_KEY)),
        needs_reference=bool(config_value(config, "algorithm.use_kl_in_reward"))
        or bool(config_value(config, f"{actor}.use_kl_loss")),
        sequence_parallel=sequence,
        rollout_parallel=int(config_value(config, TENSOR_PARALLEL_KEY))
        * int(config_value(config, f"{rollout}.data_parallel_size"))
        * int(config_value(config, f"{rollout}.pipeline_model_parallel_size")),
    )


def scaled_batches(settings: BatchSettings, ranks: int) -> dict[str, int]:
    """The profile's seed rows per step and per mini-batch, for one GPU, times the policy's GPUs."""
    return {TRAIN_BATCH_KEY: settings.train_batch_size * ranks, MINI_BATCH_KEY: settings.ppo_mini_batch_size * ranks}


def _divisors(number: int) -> list[int]:
    """The divisors of `number`, smallest first."""
    return [value for value in range(1, number + 1) if number % value == 0]


def _micro_problem(key: str, micro: int | None, share: int, what: str) -> list[str]:
    """A micro-batch per GPU that does not divide a rank's share of `share` samples, with the value to set."""
    if micro is None or share % micro == 0:
        return []
    fits = max(value for value in _divisors(share) if value <= micro)
    return [f"{key}={micro} does not divide the {share} samples of {what} each GPU gets: set it to {fits}"]


def batch_problems(settings: BatchSettings, ranks: int) -> list[str]:
    """Each split of a step over `ranks` policy GPUs that verl would fail on, with the setting that fixes it."""
    problems = []
    if ranks % settings.rollout_parallel:
        problems.append(
            f"the {ranks} GPUs do not split into vLLM rollout replicas of {settings.rollout_parallel} GPUs "
            f"({TENSOR_PARALLEL_KEY} x data_parallel_size x pipeline_model_parallel_size): set "
            f"{TENSOR_PARALLEL_KEY} to one of {_divisors(ranks)}"
        )
    if ranks % settings.sequence_parallel:
        sequence = f"{SEQUENCE_PARALLEL_KEY}={settings.sequence_parallel}"
        return [*problems, f"{sequence} does not divide the {ranks} GPUs: set it to one of {_divisors(ranks)}"]
    ranks_dp = ranks // settings.sequence_parallel
    mini = settings.ppo_mini_batch_size * settings.rollout_n
    named = f"{MINI_BATCH_KEY}={settings.ppo_mini_batch_size} x rollout.n={settings.rollout_n}"
    if not settings.dynamic and settings.train_batch_size < settings.ppo_mini_batch_size:
        problems.append(
            f"{TRAIN_BATCH_KEY}={settings.train_batch_size} is below {MINI_BATCH_KEY}={settings.ppo_mini_batch_size}: "
            f"raise it to {settings.ppo_mini_batch_size} or more"
        )
    if not settings.dynamic and settings.games % ranks:
        step = ranks // math.gcd(ranks, settings.rollout_n)
        problems.append(
            f"{TRAIN_BATCH_KEY}={settings.train_batch_size} x rollout.n={settings.rollout_n} = {settings.games} games "
            f"do not split over {ranks} GPUs: set {TRAIN_BATCH_KEY} to a multiple of {step}"
        )
    if mini % ranks_dp:
        step = ranks_dp // math.gcd(ranks_dp, settings.rollout_n)
        fix = f"set {MINI_BATCH_KEY} to a multiple of {step} (and {TRAIN_BATCH_KEY} to a multiple of it)"
        return [
            *problems,
            f"{named} = {mini} samples per mini-batch do not split over {ranks_dp} data-parallel GPUs: {fix}",
        ]
    share = mini // ranks_dp
    if not settings.dynamic:
        problems += _micro_problem(MICRO_BATCH_KEY, settings.micro_batch, share, f"a mini-batch ({named})")
        problems += _micro_problem(ROLLOUT_MICRO_KEY, settings.rollout_micro_batch, share, "the old log-probs")
    if settings.needs_reference and not settings.ref_dynamic:
        problems += _micro_problem(REF_MICRO_KEY, settings.ref_micro_batch, share, "the reference log-probs")
    return problems
