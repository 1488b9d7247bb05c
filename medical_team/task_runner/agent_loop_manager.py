"""verl's V1 agent-loop manager in the task runner, running medplay's agent-loop workers.

Select with `+actor_rollout_ref.rollout.agent.agent_loop_manager_class=
medical_team.task_runner.agent_loop_manager.SelfPlayAgentLoopManager`. It starts `SelfPlayAgentLoopWorker`s
(medical_team/agent_loop/worker.py) instead of verl's and collects from them, for the trainer, the games they
settled, the judge outages they met, the benchmark answers of validation and the learning probe's observations.
"""

from __future__ import annotations

from typing import Any

import ray
from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopManagerTQ

from medical_team.agent_loop.worker import SelfPlayAgentLoopWorker
from medical_team.game import JudgeStats
from medical_team.run.step_games import StepGame


class SelfPlayAgentLoopManager(AgentLoopManagerTQ):
    """verl's TransferQueue agent-loop manager running `SelfPlayAgentLoopWorker`s."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.agent_loop_workers_class = SelfPlayAgentLoopWorker

    def drain_games(self) -> tuple[list[StepGame], JudgeStats]:
        """Every game the workers settled since the last call, and the judge's summed timing."""
        games, stats = [], JudgeStats()
        for records, worker_stats in ray.get([w.drain_games.remote() for w in self.agent_loop_workers]):
            games.extend(StepGame.from_record(record) for record in records)
            stats = stats.merge(worker_stats)
        return games, stats

    def judge_outages(self) -> list[str]:
        """The judge outages any worker met since the last call (messages of JudgeUnavailableError)."""
        return [message for taken in ray.get([w.take_judge_outages.remote() for w in self.agent_loop_workers])
                for message in taken]

    def drain_benchmark_answers(self) -> list[dict[str, str]]:
        """Every worker's benchmark answers of validation since the last call (`text_id`, `response`)."""
        return [
            answer
            for answers in ray.get([w.drain_benchmark_answers.remote() for w in self.agent_loop_workers])
            for answer in answers
        ]

    def drain_probe_observations(self) -> list[tuple[str, bool]]:
        """The learning probe's (role, behaviour shown) pairs from every worker since the last call."""
        return [hit for hits in ray.get([w.drain_probe_observations.remote() for w in self.agent_loop_workers]) for hit in hits]
