"""verl's stock single-turn GRPO step, which the self-play step is compared with (`medplay bench step`, `scaling`,
`startup`, `step-variants`, and the GPU kit's bench phase): the overrides that make a cpu-smoke or GPU run one."""

from __future__ import annotations

# verl's own agent loop and manager, the `grpo` estimator and the stock `sync` V1 trainer. Its replay buffer looks for
# finished rows as often as medplay's (verl's sampler seam, medical_team/task_runner/replay_poll.py): with verl's 2 s
# poll the comparison measured the poll, not the step.
STOCK_OVERRIDES = (
    "actor_rollout_ref.rollout.agent.default_agent_loop=single_turn_agent",
    "actor_rollout_ref.rollout.agent.agent_loop_manager_class=null",
    "algorithm.adv_estimator=grpo",
    "trainer.v1.trainer_mode=sync",
    "trainer.v1.sampler.custom_sampler.path=pkg://medical_team.task_runner.replay_poll",
    "trainer.v1.sampler.custom_sampler.name=QuickPollReplayBuffer",
)
