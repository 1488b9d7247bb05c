"""A step's batches over the policy's GPUs (medical_team/hardware/gpu_batches.py): scaling and verl's splits checked.

Run: .venv/bin/python -m pytest -q tests/hardware/test_gpu_batches.py
"""

from __future__ import annotations

import dataclasses

import pytest

from medical_team.hardware.gpu_batches import BatchSettings, batch_problems, scaled_batches

# cpu-smoke's numbers: fixed micro-batches of 4 rows, one game per seed row.
SMOKE = BatchSettings(train_batch_size=4, rollout_n=1, ppo_mini_batch_size=4, dynamic=False, micro_batch=4,
                      rollout_micro_batch=4, ref_dynamic=False, ref_micro_batch=4, needs_reference=True,
                      sequence_parallel=1, rollout_parallel=1)  # fmt: skip
# 80g's: token-packed micro-batches, 4 games per seed row.
GPU = dataclasses.replace(SMOKE, train_batch_size=8, rollout_n=4, ppo_mini_batch_size=4, dynamic=True,
                          micro_batch=None, rollout_micro_batch=None, ref_dynamic=True, ref_micro_batch=None)  # fmt: skip


@pytest.mark.parametrize("ranks", [1, 2, 4, 8])
@pytest.mark.parametrize("settings", [SMOKE, GPU])
def test_the_profiles_numbers_scaled_with_the_gpus_split_over_them(settings, ranks):
    scaled = scaled_batches(settings, ranks)
    assert scaled == {"data.train_batch_size": settings.train_batch_size * ranks,
                      "actor_rollout_ref.actor.ppo_mini_batch_size": settings.ppo_mini_batch_size * ranks}  # fmt: skip
    train, mini = scaled.values()
    assert batch_problems(dataclasses.replace(settings, train_batch_size=train, ppo_mini_batch_size=mini), ranks) == []


def test_a_micro_batch_that_does_not_divide_a_ranks_share_is_named_with_the_value_that_does():
    # The first try: cpu-smoke on 2 ranks, its own numbers: each rank gets 2 of the 4-sample mini-batch.
    assert batch_problems(SMOKE, 2) == [
        (
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 does not divide the 2 samples of a mini-batch "
            "(actor_rollout_ref.actor.ppo_mini_batch_size=4 x rollout.n=1) each GPU gets: set it to 2"
        ),
        (
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 does not divide the 2 samples of the old "
            "log-probs each GPU gets: set it to 2"
        ),
        (
            "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 does not divide the 2 samples of the reference "
            "log-probs each GPU gets: set it to 2"
        ),
    ]
    fixed = dataclasses.replace(SMOKE, micro_batch=2, rollout_micro_batch=2, ref_micro_batch=2)
    assert batch_problems(fixed, 2) == []
    # Without a reference model its micro-batch is never used.
    assert len(batch_problems(dataclasses.replace(SMOKE, needs_reference=False), 2)) == 2


def test_a_mini_batch_that_does_not_split_over_the_ranks_is_named_with_a_multiple_that_does():
    # 80g's own numbers on 3 GPUs (dynamic batches: only the mini-batch split is asserted by verl).
    assert batch_problems(GPU, 3) == [
        (
            "actor_rollout_ref.actor.ppo_mini_batch_size=4 x rollout.n=4 = 16 samples per mini-batch do not split over "
            "3 data-parallel GPUs: set actor_rollout_ref.actor.ppo_mini_batch_size to a multiple of 3 (and "
            "data.train_batch_size to a multiple of it)"
        )
    ]
    assert batch_problems(dataclasses.replace(GPU, ppo_mini_batch_size=6, train_batch_size=12), 3) == []
    # rollout.n=4 covers a factor 4 of the GPUs: 6 GPUs need mini-batches of a multiple of 3 seed rows.
    assert "a multiple of 3" in batch_problems(dataclasses.replace(GPU, ppo_mini_batch_size=8), 6)[0]


def test_fixed_batches_need_whole_games_per_gpu_and_a_mini_batch_within_the_step():
    settings = dataclasses.replace(SMOKE, train_batch_size=3, ppo_mini_batch_size=4, micro_batch=1,
                                   rollout_micro_batch=1, ref_micro_batch=1)  # fmt: skip
    assert batch_problems(settings, 2) == [
        "data.train_batch_size=3 is below actor_rollout_ref.actor.ppo_mini_batch_size=4: raise it to 4 or more",
        (
            "data.train_batch_size=3 x rollout.n=1 = 3 games do not split over 2 GPUs: set data.train_batch_size to a "
            "multiple of 2"
        ),
    ]
    assert batch_problems(dataclasses.replace(settings, dynamic=True, ref_dynamic=True), 2) == []


def test_rollout_replicas_and_sequence_parallel_groups_must_divide_the_gpus():
    assert batch_problems(dataclasses.replace(GPU, rollout_parallel=2), 3) == [
        (
            "the 3 GPUs do not split into vLLM rollout replicas of 2 GPUs (actor_rollout_ref.rollout."
            "tensor_model_parallel_size x data_parallel_size x pipeline_model_parallel_size): set "
            "actor_rollout_ref.rollout.tensor_model_parallel_size to one of [1, 3]"
        ),
        (
            "actor_rollout_ref.actor.ppo_mini_batch_size=4 x rollout.n=4 = 16 samples per mini-batch do not split over "
            "3 data-parallel GPUs: set actor_rollout_ref.actor.ppo_mini_batch_size to a multiple of 3 (and "
            "data.train_batch_size to a multiple of it)"
        ),
    ]
    assert batch_problems(dataclasses.replace(GPU, rollout_parallel=2), 4) == []
    (problem,) = batch_problems(dataclasses.replace(GPU, sequence_parallel=4), 2)
    assert (
        problem
        == "actor_rollout_ref.actor.ulysses_sequence_parallel_size=4 does not divide the 2 GPUs: set it to one of [1, 2]"
    )
    # Sequence parallelism shrinks the data-parallel ranks the mini-batch splits over: 8 GPUs in groups of 2.
    assert batch_problems(dataclasses.replace(GPU, sequence_parallel=2, ppo_mini_batch_size=1), 8) == []
