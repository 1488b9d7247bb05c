"""verl's V1 agent-loop worker (a Ray actor), changed only where a two-role game needs it.

The task runner's agent-loop manager (medical_team/task_runner/agent_loop_manager.py) starts these workers; importing
this module also registers medplay's agent loops (agent_loop.py) in the worker's process. The worker differs from
verl's `AgentLoopWorkerTQ` in two small overrides:

- `_agent_loop_postprocess`: verl copies a trajectory's last reward onto its earlier outputs
  (`trainer/ppo/v1/agent_loop_tq.py`, "output.reward_score = final_output.reward_score"). The worker
  hands verl each trainable output of a game on its own, under the row uid `<prompt uid>_<role>`,
  so every output keeps its own reward and the advantage estimator can tell the roles apart. It
  also keeps the settled game for the step's metrics, including games whose samples are dropped.
- `generate_sequences`: validation batches are played by the assessor-only loop; the answers it gives on
  benchmark rows are kept for the trainer (`drain_benchmark_answers`).

Once the trainer has taken a step's games (`drain_games`), the worker hands the freed pages glibc keeps back to the
system (run/heap.py).
"""

from __future__ import annotations

from typing import Any

import ray
from tensordict import NonTensorData, TensorDict
from verl.experimental.agent_loop.agent_loop import AgentLoopOutput
from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopWorkerTQ

from medical_team.agent_loop.agent_loop import (
    BENCHMARK_ANSWER_FIELD,
    GAME_FIELD,
    JUDGE_STATS_FIELD,
    PROBE_FIELD,
    ROLE_FIELD,
    TRACE_FIELD,
    TRAINS_FIELD,
    take_judge_outages,
)
from medical_team.common.vocab import ASSESSOR_AGENT, Role
from medical_team.game import JudgeStats
from medical_team.run.heap import trim_heap
from medical_team.run.roles import role_uid, row_key
from medical_team.run.step_games import ledger_record


class GameLedger:
    """The games a worker settled since the trainer last asked, with the judge's timing."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.judge_stats = JudgeStats()
        self.probe_observations: list[tuple[str, bool]] = []  # (role, behaviour shown) per played turn, learning probe only
        self.benchmark_answers: list[dict[str, str]] = []  # validation on benchmark rows: text_id and response

    def add(
        self,
        record: dict[str, Any],
        judge_stats: dict[str, Any],
        trace: dict[str, Any] | None = None,
        row_keys: dict[str, str] | None = None,
    ) -> None:
        """Keep one settled game (a `GameOutcome.to_record()`), with its trace and its rows' keys."""
        self.records.append(ledger_record(record, trace, row_keys))
        self.judge_stats = self.judge_stats.merge(JudgeStats(**judge_stats))

    def drain(self) -> tuple[list[dict[str, Any]], JudgeStats]:
        """Everything kept so far, and forget it."""
        drained = (self.records, self.judge_stats)
        self.records, self.judge_stats = [], JudgeStats()
        return drained

    def drain_probe_observations(self) -> list[tuple[str, bool]]:
        """The learning probe's (role, behaviour shown) pairs kept so far, and forget them."""
        drained, self.probe_observations = self.probe_observations, []
        return drained

    def drain_benchmark_answers(self) -> list[dict[str, str]]:
        """The benchmark answers of validation kept so far, and forget them."""
        drained, self.benchmark_answers = self.benchmark_answers, []
        return drained


class _SelfPlayAgentLoopWorker(AgentLoopWorkerTQ.__ray_actor_class__):
    """verl's TransferQueue agent-loop worker, with per-role outputs and a game ledger."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ledger = GameLedger()

    async def generate_sequences(self, batch: TensorDict) -> None:
        """Start the batch's games; validation batches run the assessor-only loop."""
        if "validate" in batch and bool(batch["validate"]):
            batch["agent_name"] = NonTensorData(ASSESSOR_AGENT)
        await super().generate_sequences(batch)

    async def _agent_loop_postprocess(
        self, output: AgentLoopOutput | list[AgentLoopOutput], validate: bool, **kwargs: Any
    ) -> None:
        """Record a self-play game, then store each trainable output alone under its role's uid."""
        outputs = output if isinstance(output, list) else [output]
        for out in outputs:
            if BENCHMARK_ANSWER_FIELD in out.extra_fields:
                self.ledger.benchmark_answers.append(out.extra_fields.pop(BENCHMARK_ANSWER_FIELD))
        if validate or not outputs or GAME_FIELD not in outputs[-1].extra_fields:
            await super()._agent_loop_postprocess(output, validate, **kwargs)
            return
        final_fields = outputs[-1].extra_fields
        game, judge_stats, trace = (final_fields.pop(key) for key in (GAME_FIELD, JUDGE_STATS_FIELD, TRACE_FIELD))
        trained = [out for out in outputs if out.extra_fields.pop(TRAINS_FIELD)]
        row_keys = {out.extra_fields[ROLE_FIELD]: row_key(kwargs["uid"], Role(out.extra_fields[ROLE_FIELD]),
                                                          kwargs["session_id"]) for out in trained}
        self.ledger.add(game, judge_stats, trace, row_keys)
        for out in outputs:
            if PROBE_FIELD in out.extra_fields:
                self.ledger.probe_observations.append((out.extra_fields[ROLE_FIELD], out.extra_fields.pop(PROBE_FIELD)))
        for out in trained:
            uid = role_uid(kwargs["uid"], Role(out.extra_fields[ROLE_FIELD]))
            await super()._agent_loop_postprocess(out, validate, **{**kwargs, "uid": uid})

    async def drain_games(self) -> tuple[list[dict[str, Any]], JudgeStats]:
        """The games settled since the last call (records of `GameOutcome.to_record`); the step's games are over."""
        drained = self.ledger.drain()
        # The step's prompts, replies and tokenizations are freed by now; glibc keeps the pages in the threads' arenas.
        trim_heap()
        return drained

    async def drain_probe_observations(self) -> list[tuple[str, bool]]:
        """The learning probe's (role, behaviour shown) pairs since the last call."""
        return self.ledger.drain_probe_observations()

    async def drain_benchmark_answers(self) -> list[dict[str, str]]:
        """The benchmark answers of validation since the last call (`text_id`, `response`)."""
        return self.ledger.drain_benchmark_answers()

    async def take_judge_outages(self) -> list[str]:
        """The judge outages this worker's agent loops met since the last call."""
        return take_judge_outages()


SelfPlayAgentLoopWorker = ray.remote(_SelfPlayAgentLoopWorker)
