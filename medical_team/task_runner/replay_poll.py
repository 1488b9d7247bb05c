"""How often a V1 step looks for finished games, and verl's sync replay buffer with that interval.

medplay's trainer sets the interval on the buffer verl builds (`SelfPlayTrainer._build_replay_buffer`).
verl's stock trainers get the same buffer through verl's sampler seam (`make bench` runs its stock step so):

    trainer.v1.sampler.custom_sampler.path=pkg://medical_team.task_runner.replay_poll
    trainer.v1.sampler.custom_sampler.name=QuickPollReplayBuffer

Through that seam verl passes no DAPO group-filtering arguments (`algorithm.filter_groups`), so the class
suits runs without group filtering only, which is every run medplay makes.
"""

from __future__ import annotations

from typing import Any

from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

# verl's replay buffer sleeps 2 s between looks (`poll_interval`, not a config key in 0.9.1), so generation ends up
# to a look late: on an H200, steps of 256 games with 135 M parameters spent 4.1 or 8.1 s in generation
# (docs/results/ladder-gpu.md). A look is a few dictionary reads.
REPLAY_POLL_S = 0.1


class QuickPollReplayBuffer(ReplayBuffer):
    """verl's sync replay buffer, looking for finished games every `REPLAY_POLL_S` seconds instead of every 2 s."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """verl's constructor with `poll_interval=REPLAY_POLL_S` unless the caller names one."""
        kwargs.setdefault("poll_interval", REPLAY_POLL_S)
        super().__init__(*args, **kwargs)
