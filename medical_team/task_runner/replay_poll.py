"""How often a V1 step looks for finished games, and verl's sync replay buffer with that interval.

medplay's trainer sets the interval on the buffer verl builds (`SelfPlayTrainer._build_replay_buffer`).
verl's stock trainers get the same buffer through verl's sampler seam (`medplay bench step` runs its stock step so):

    trainer.v1.sampler.custom_sampler.path=pkg://medical_team.task_runner.replay_poll
    trainer.v1.sampler.custom_sampler.name=QuickPollReplayBuffer

Through that seam verl passes no DAPO group-filtering arguments (`algorithm.filter_groups`), so the class
suits runs without group filtering only, which is every run medplay makes.
"""

from __future__ import annotations

from typing import Any

from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

from medical_team.run.replay_poll_interval import REPLAY_POLL_S


class QuickPollReplayBuffer(ReplayBuffer):
    """verl's sync replay buffer, looking for finished games every `REPLAY_POLL_S` seconds instead of every 2 s."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """verl's constructor with `poll_interval=REPLAY_POLL_S` unless the caller names one."""
        kwargs.setdefault("poll_interval", REPLAY_POLL_S)
        super().__init__(*args, **kwargs)
