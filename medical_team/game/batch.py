"""Many games at once over a batched generator and a batched judge, each game played by `driver.play_game`.

    batch = play_batch(seeds, generator, judge, config)
    batch.games, batch.metrics

The games advance in rounds. A round ends when every unfinished game waits on the generator or
on the judge; then all waiting prompts go to one `Generator.generate` call and all waiting
requests to one `Judge.judge` call. A batch so makes three calls: the attackers of the
adversarial games with the assessors of the vanilla games, then the assessors of the adversarial
games, then the judge.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from medical_team.common.vocab import Role
from medical_team.data.records import GameSeed
from medical_team.game.driver import PlayedGame, Reply, play_game
from medical_team.game.judging import Judge, JudgeRequest, JudgeVerdict
from medical_team.game.metrics import game_metrics
from medical_team.game.prompts import Message
from medical_team.game.settle import GameConfig, JudgeStats, call_judge

Item = TypeVar("Item")
Result = TypeVar("Result")


class Generator(Protocol):
    """Batched text generation: one response per chat prompt, in order.

    The generator renders each prompt with its chat template and appends the thinking prefix
    (`prompts.render_prompt`), so responses begin with the reasoning.
    """

    def generate(self, prompts: Sequence[list[Message]]) -> list[str]:
        """One response text per prompt."""
        ...


@dataclass(frozen=True)
class GameBatch:
    """What one call of `play_batch` produced: the settled games, in seed order, and the judge's timing."""

    games: list[PlayedGame[Reply]]
    judge_stats: JudgeStats

    @property
    def metrics(self) -> dict[str, float]:
        """The step metrics of these games (`game_metrics`)."""
        return game_metrics([game.outcome for game in self.games], self.judge_stats)


class _Rounds:
    """The generate and judge functions of the batch's games: each call waits for the end of the round."""

    def __init__(self, generator: Generator, judge: Judge, games: int) -> None:
        self.generator = generator
        self.judge_backend = judge
        self.running = games
        self.prompts: list[tuple[list[Message], asyncio.Future[Reply]]] = []
        self.requests: list[tuple[JudgeRequest, asyncio.Future[JudgeVerdict]]] = []
        self.judge_stats = JudgeStats()

    async def generate(self, role: Role, messages: list[Message]) -> Reply:
        """The game's response, generated with the round's other prompts."""
        return await self._wait(self.prompts, messages)

    async def judge(self, request: JudgeRequest) -> JudgeVerdict:
        """The game's verdict, judged with the round's other requests."""
        return await self._wait(self.requests, request)

    async def play(self, seed: GameSeed, config: GameConfig) -> PlayedGame[Reply]:
        """Play one game of the batch."""
        try:
            return await play_game(seed, self.generate, self.judge, config)
        finally:
            self.running -= 1
            self._end_round_if_all_wait()

    async def _wait(self, queue: list[tuple[Any, asyncio.Future[Any]]], item: Any) -> Any:
        """Queue `item` for the round and wait for its answer."""
        future = asyncio.get_running_loop().create_future()
        queue.append((item, future))
        self._end_round_if_all_wait()
        return await future

    def _end_round_if_all_wait(self) -> None:
        """When every unfinished game waits, end the round: one generate call and one judge call answer them all."""
        if len(self.prompts) + len(self.requests) < self.running:
            return
        prompts, self.prompts = self.prompts, []
        requests, self.requests = self.requests, []
        _answer(prompts, self._texts)
        _answer(requests, self._verdicts)

    def _texts(self, prompts: list[list[Message]]) -> list[Reply]:
        """One generate call, checking that the generator answered every prompt."""
        texts = list(self.generator.generate(prompts))
        if len(texts) != len(prompts):
            raise RuntimeError(
                f"{type(self.generator).__name__} returned {len(texts)} texts for {len(prompts)} prompts"
            )
        return [Reply(text) for text in texts]

    def _verdicts(self, requests: list[JudgeRequest]) -> list[JudgeVerdict]:
        """One timed judge call."""
        verdicts, stats = call_judge(self.judge_backend, requests)
        self.judge_stats = self.judge_stats.merge(stats)
        return verdicts


def _answer(waiting: list[tuple[Item, asyncio.Future[Result]]], compute: Callable[[list[Item]], list[Result]]) -> None:
    """Answer every waiting call with one batched computation, or hand each of them its error."""
    if not waiting:
        return
    try:
        results = compute([item for item, _ in waiting])
    except Exception as error:  # noqa: BLE001 - re-raised in every game that waits on the batch
        for _, future in waiting:
            future.set_exception(error)
        return
    for (_, future), result in zip(waiting, results, strict=True):
        future.set_result(result)


async def _play_all(seeds: Sequence[GameSeed], generator: Generator, judge: Judge, config: GameConfig) -> GameBatch:
    """Every seed's game, played concurrently in rounds."""
    rounds = _Rounds(generator, judge, len(seeds))
    games = await asyncio.gather(*(rounds.play(seed, config) for seed in seeds))
    return GameBatch(list(games), rounds.judge_stats)


def play_batch(
    seeds: Sequence[GameSeed], generator: Generator, judge: Judge, config: GameConfig | None = None
) -> GameBatch:
    """Play one game per seed with `play_game`, batching each round's prompts and judge requests."""
    return asyncio.run(_play_all(seeds, generator, judge, config or GameConfig()))
