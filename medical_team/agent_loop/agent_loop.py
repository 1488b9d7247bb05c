"""verl agent loops: one self-play game per dataset row, and the assessor alone for validation.

Both are thin adapters around the game driver (`medical_team.game.driver.play_game`), which plays
and settles the game. What is verl's stays here: the generate function on verl's rollout server
(the prompt rendered and tokenized; one longer than `rollout.prompt_length`, which is
`data.max_prompt_length`, has its note's end cut, never its instructions: `game.prompt_fit`, a warning
in the run log; token ids and log-probs kept), the judge called off the event loop with
its gold probes, and one `AgentLoopOutput` per turn.

`medplay_selfplay` (training) returns `[attacker, assessor]` or `[assessor]`, each output with its
own prompt, response mask and reward (`reward_score`, so verl's reward computation is skipped),
tagged in `extra_fields` with `role` and `category`. `SelfPlayAgentLoopWorker` records the settled
game and hands verl only the outputs that train (training mode, removed ties).

`medplay_assessor` (validation) plays the row's seed as a vanilla game and leaves the reward to
verl's reward loop, which calls `medical_team.agent_loop.reward_fn.compute_score`. On a benchmark row it also
hands the worker the note's id and the response text, which the trainer writes for `medplay eval --responses`
(`medical_team.run.benchmark_validation`).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import asdict, dataclass, replace
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register

from medical_team.agent_loop.judge_factory import judge_executor, selfplay_gold_probes, selfplay_judge
from medical_team.common.vocab import ASSESSOR_AGENT, BENCHMARK_DATA_SOURCE, SELFPLAY_AGENT, Role
from medical_team.game import JudgeStats, PlayedGame, Turn, call_judge, play_game
from medical_team.game.driver import GenerateFn
from medical_team.game.judging import JudgeRequest, JudgeVerdict
from medical_team.game.prompt_fit import fit_prompt
from medical_team.game.prompts import Message
from medical_team.game.settle import as_vanilla
from medical_team.judge.gold_probe import count_correct
from medical_team.judge.outage import JudgeUnavailableError
from medical_team.run.learning_probe import probe_reward, shows_behaviour
from medical_team.run.rows import seed_of_row
from medical_team.run.settings import SelfPlaySettings, settings_from_trainer_config

log = logging.getLogger(__name__)

# extra_fields keys: the first two stay on every row verl stores; the others are read and removed by the worker.
ROLE_FIELD = "role"
CATEGORY_FIELD = "category"
TRAINS_FIELD = "medplay_trains"
GAME_FIELD = "medplay_game"
JUDGE_STATS_FIELD = "medplay_judge_stats"
TRACE_FIELD = "medplay_trace"
PROBE_FIELD = "medplay_probe_behaviour"
BENCHMARK_ANSWER_FIELD = "medplay_benchmark_answer"  # validation on benchmark rows: the note's id and response text

# Judge outages met by the agent loops of this worker process. verl turns a failed agent loop into a
# failed sample group and later fails the step with an error of its own; the trainer asks for these
# (through the worker) to report the real cause instead.
_judge_outages: list[str] = []


# The config object the settings were bound from, and the settings: verl builds an agent loop per game, every
# one on its worker's one config, so the section is bound once per worker process.
_bound: list[tuple[Any, SelfPlaySettings]] = []


def bound_settings(config: Any) -> SelfPlaySettings:
    """The `medplay:` settings of `config`, bound at its first game in this process."""
    if not _bound or _bound[0][0] is not config:
        _bound[:] = [(config, settings_from_trainer_config(config))]
    return _bound[0][1]


def request_seed(*parts: Any) -> int:
    """A vLLM sampling seed (63 bits) from `parts`: the same in every process and run (Python's hash() is not)."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def take_judge_outages() -> list[str]:
    """The judge outages seen in this process since the last call."""
    taken = list(_judge_outages)
    _judge_outages.clear()
    return taken


@dataclass(frozen=True)
class RolloutReply:
    """One turn as verl's rollout server generated it: token ids, decoded text, and what it reported."""

    prompt_ids: list[int]
    response_ids: list[int]
    text: str
    logprobs: list[float] | None
    seconds: float
    rollout_fields: dict[str, Any]  # min/max_global_steps etc. from the rollout server


class _TurnPlayer(AgentLoopBase):
    """The game driver's generate function on verl's rollout server, and verl's output for a played turn."""

    def _prompt_ids(self, role: Role, messages: list[Message]) -> list[int]:
        """The game's prompt (`render_prompt`: chat template + thinking prefix), tokenized, within the prompt length.

        A longer prompt has its note's end cut, never its instructions (verl's `_cap_text_prompt_length`
        would drop its beginning), and the cut is logged.
        """
        limit = self.rollout_config.prompt_length
        fitted = fit_prompt(self.tokenizer, messages, limit, self.apply_chat_template_kwargs)
        if fitted.cut_tokens:
            log.warning(
                "medplay: the %s's prompt was over rollout.prompt_length=%d tokens: its note was cut from %d to %d "
                "tokens, the instructions kept",
                role.value,
                limit,
                fitted.note_tokens,
                fitted.note_tokens - fitted.cut_tokens,
            )
        return fitted.ids

    def _generate_fn(self, sampling_params: dict[str, Any], game_key: tuple[Any, ...] = ()) -> GenerateFn[RolloutReply]:
        """`play_game`'s generate function: one turn through verl's rollout server.

        With `game_key` (seeded sampling) the n-th turn of the game samples with its own seed, derived
        from the key and n; without it, vLLM's shared generator.
        """
        turns = 0

        async def generate(role: Role, messages: list[Message]) -> RolloutReply:
            nonlocal turns
            prompt_ids = await self.loop.run_in_executor(None, self._prompt_ids, role, messages)
            params = sampling_params
            if game_key:
                params = {**sampling_params, "seed": request_seed(*game_key, turns)}
            turns += 1
            start = self.loop.time()
            output = await self.server_manager.generate(
                request_id=uuid4().hex, prompt_ids=prompt_ids, sampling_params=params
            )
            seconds = self.loop.time() - start
            response_ids = list(output.token_ids[: self.rollout_config.response_length])
            logprobs = list(output.log_probs[: len(response_ids)]) if output.log_probs else None
            text = self.tokenizer.decode(response_ids, skip_special_tokens=True)
            return RolloutReply(prompt_ids, response_ids, text, logprobs, seconds, dict(output.extra_fields))

        return generate

    @staticmethod
    def _output(turn: Turn[RolloutReply], reward: float | None, extra: dict[str, Any]) -> AgentLoopOutput:
        """verl's output for one turn: every generated token is trained (response mask 1)."""
        reply = turn.generation
        return AgentLoopOutput(
            prompt_ids=reply.prompt_ids,
            response_ids=reply.response_ids,
            response_mask=[1] * len(reply.response_ids),
            response_logprobs=reply.logprobs,
            reward_score=reward,
            num_turns=2,
            metrics=AgentLoopMetrics(generate_sequences=reply.seconds),
            extra_fields={
                **reply.rollout_fields,
                ROLE_FIELD: turn.role.value,
                "turn_scores": [],
                "tool_rewards": [],
                **extra,
            },
        )


@register(SELFPLAY_AGENT)
class SelfPlayAgentLoop(_TurnPlayer):
    """One game per row, played by the game driver; each turn becomes an output with its role's reward."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings = bound_settings(self.config)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> list[AgentLoopOutput]:
        """Play the row's game; outputs in turn order, the settled game on the last one."""
        seed, benign_mode = seed_of_row(kwargs.get("data_source"), kwargs["extra_info"])
        seed = replace(seed, category=self.settings.played_category(seed.category))
        judge_stats = JudgeStats()

        async def judge(request: JudgeRequest) -> JudgeVerdict:
            nonlocal judge_stats
            verdict, judge_stats = await self._judge(request)
            return verdict

        config = replace(self.settings.game, benign_mode=benign_mode)
        game = await play_game(seed, self._generate_fn(sampling_params, self._game_key(kwargs)), judge, config)
        return self._outputs(game, judge_stats)

    def _game_key(self, row: dict[str, Any]) -> tuple[Any, ...]:
        """Under `medplay.seeded_sampling`: (rollout seed, step, row index, game of the row); else empty."""
        if not self.settings.seeded_sampling:
            return ()
        return (self.rollout_config.seed, row.get("global_steps"), row.get("index"), row.get("session_id"))

    async def _judge(self, request: JudgeRequest) -> tuple[JudgeVerdict, JudgeStats]:
        """The judge's verdict on one adversarial game, off the event loop, with gold probes riding along."""
        judge = selfplay_judge(self.settings.judge)
        probes = selfplay_gold_probes(self.settings.judge)
        gold = probes.draw() if probes is not None else []  # judged along with the game, never trained on
        try:
            executor = judge_executor(self.settings.judge)
            requests = [request, *(probe.request for probe in gold)]
            verdicts, stats = await self.loop.run_in_executor(executor, call_judge, judge, requests)
        except JudgeUnavailableError as outage:
            _judge_outages.append(str(outage))
            raise
        if gold:
            stats = replace(stats, gold_count=len(gold), gold_correct=count_correct(gold, verdicts[1:]))
        return verdicts[0], stats

    def _outputs(self, game: PlayedGame[RolloutReply], judge_stats: JudgeStats) -> list[AgentLoopOutput]:
        """One output per turn with its role's reward; the last carries the settled game and its trace for the worker."""
        outcome = game.outcome
        outputs = []
        for turn in game.turns:
            trains = outcome.reward(turn.role) is not None and self.settings.training_mode.trains(turn.role)
            extra = {CATEGORY_FIELD: outcome.category.value, TRAINS_FIELD: trains}
            reward = outcome.reward(turn.role) or 0.0
            if self.settings.learning_probe.enabled:  # its reward replaces the game's (run/learning_probe.py)
                extra[PROBE_FIELD] = shows_behaviour(turn.role, turn.generation.response_ids, len(self.tokenizer))
                reward = probe_reward(self.settings.learning_probe, extra[PROBE_FIELD])
            outputs.append(self._output(turn, reward, extra))
        trace = game.trace(lambda turn: len(turn.generation.response_ids), self.rollout_config.response_length)
        outputs[-1].extra_fields[GAME_FIELD] = outcome.to_record()
        outputs[-1].extra_fields[JUDGE_STATS_FIELD] = asdict(judge_stats)
        outputs[-1].extra_fields[TRACE_FIELD] = trace.to_record()
        return outputs


@register(ASSESSOR_AGENT)
class AssessorAgentLoop(_TurnPlayer):
    """The assessor alone on the row's seed note (a vanilla game); verl's reward loop scores it (validation)."""

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        """One assessor turn on the seed note, unscored."""
        data_source = kwargs.get("data_source")
        seed, _ = seed_of_row(data_source, kwargs["extra_info"])
        game = await play_game(as_vanilla(seed), self._generate_fn(sampling_params))
        turn = game.turns[-1]
        extra: dict[str, Any] = {CATEGORY_FIELD: game.outcome.category.value}
        if data_source == BENCHMARK_DATA_SOURCE:
            extra[BENCHMARK_ANSWER_FIELD] = {"text_id": seed.note_id, "response": turn.generation.text}
        return self._output(turn, None, extra)
