"""verl's sampler seam builds medplay's quick-poll replay buffer from the overrides `make bench` gives its stock step.

`medplay bench step` compares the self-play step with verl's stock single-turn step; both must look for finished
rows equally often, or the ratio measures verl's 2 s poll. verl's own `_build_replay_buffer` runs here on
the composed config (no trainer, no Ray).
"""

from __future__ import annotations

from types import SimpleNamespace

from composed_configs import composed_config
from verl.trainer.ppo.v1.trainer_base import PPOTrainer

from medical_team.bench.stock_step import STOCK_OVERRIDES
from medical_team.task_runner.replay_poll import REPLAY_POLL_S, QuickPollReplayBuffer


def stock_sampler_overrides() -> list[str]:
    """The sampler overrides of the bench's STOCK_OVERRIDES (medical_team/bench/stock_step.py: its replay buffer)."""
    return [override for override in STOCK_OVERRIDES if override.startswith("trainer.v1.sampler.")]


def test_the_stock_step_of_the_bench_polls_as_often_as_medplays() -> None:
    overrides = stock_sampler_overrides()
    assert overrides, "STOCK_OVERRIDES no longer name a sampler"
    config = composed_config(["trainer.v1.trainer_mode=sync", *overrides])
    trainer = SimpleNamespace(config=config, trainer_mode="sync", _add_prompts_to_generate=lambda count: None)

    buffer = PPOTrainer._build_replay_buffer(trainer)

    assert type(buffer) is QuickPollReplayBuffer
    assert buffer.poll_interval == REPLAY_POLL_S < 2.0
