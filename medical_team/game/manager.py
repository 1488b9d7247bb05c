"""Plays a batch of attacker -> assessor games over any text generator and judge, and scores them.

manager = MedicalDialogueGameManager(generator, judge, GameConfig())
batch = manager.play(seeds)   # batch.experiences (one per trained turn), batch.games, batch.metrics
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from medical_team.data.records import GameSeed
from medical_team.game.cot import parse_response
from medical_team.game.judging import Judge, JudgeVerdict
from medical_team.game.metrics import game_metrics
from medical_team.game.prompts import Message, assessor_messages, attacker_messages
from medical_team.game.settle import GameConfig, GameOutcome, JudgeStats, call_judge, judge_request, settle
from medical_team.vocab import Category, Role


class Generator(Protocol):
    """Batched text generation: one response per chat prompt, in order.

    The generator renders each prompt with its chat template and appends the thinking prefix
    (`prompts.with_thinking_prefix`), so responses begin with the reasoning.
    """

    def generate(self, prompts: Sequence[list[Message]]) -> list[str]:
        """One response text per prompt."""
        ...


@dataclass(frozen=True)
class Turn:
    """One turn of a game: who spoke, what they were shown, what they wrote, and its parsed answer."""

    role: Role
    messages: list[Message]
    response: str
    answer: str


@dataclass(frozen=True)
class PlayedGame:
    """A game's full history: its seed, its turns in order, the judge's verdict and the outcome."""

    seed: GameSeed
    turns: tuple[Turn, ...]
    judge_verdict: JudgeVerdict | None  # None in vanilla games
    outcome: GameOutcome

    def turn(self, role: Role) -> Turn | None:
        """The turn this role played, if any."""
        return next((t for t in self.turns if t.role is role), None)


@dataclass(frozen=True)
class Experience:
    """One training sample: a trained turn with its role, category and scalar reward."""

    role: Role
    category: Category
    reward: float
    messages: list[Message]
    response: str
    note_id: str
    game_index: int  # position of the game in the played batch


@dataclass(frozen=True)
class GameBatch:
    """What one call of `play` produced."""

    experiences: list[Experience]
    games: list[PlayedGame]
    metrics: dict[str, float]
    ties_removed: int  # games whose samples were dropped because the judge could not decide


def _experiences(index: int, game: PlayedGame, roles: frozenset[Role]) -> list[Experience]:
    """The trained turns of one game (none when it is a dropped tie)."""
    rewards = {Role.ATTACKER: game.outcome.attacker_reward, Role.ASSESSOR: game.outcome.assessor_reward}
    return [
        Experience(
            role=turn.role,
            category=game.seed.category,
            reward=reward,
            messages=turn.messages,
            response=turn.response,
            note_id=game.seed.note_id,
            game_index=index,
        )
        for turn in game.turns
        if turn.role in roles and (reward := rewards[turn.role]) is not None
    ]


class MedicalDialogueGameManager:
    """Plays batches of two-turn games with one generator (both roles) and one judge."""

    def __init__(
        self,
        generator: Generator,
        judge: Judge,
        config: GameConfig | None = None,
        train_roles: frozenset[Role] = frozenset(Role),
    ) -> None:
        self.generator = generator
        self.judge = judge
        self.config = config or GameConfig()
        self.train_roles = train_roles

    def play(self, seeds: Sequence[GameSeed]) -> GameBatch:
        """Play one game per seed: attackers, then assessors, then the judge; settle and score all."""
        attacks = self._attacker_turns(seeds)
        notes = [attacks[i].answer if i in attacks else seed.text for i, seed in enumerate(seeds)]
        prompts = [assessor_messages(note) for note in notes]
        assessor_texts = self._generate(prompts)
        verdicts, stats = self._judge(seeds, attacks)

        games = []
        for i, seed in enumerate(seeds):
            attack = attacks.get(i)
            assess = Turn(Role.ASSESSOR, prompts[i], assessor_texts[i], parse_response(assessor_texts[i]).answer)
            outcome = settle(seed, attack and attack.response, assess.response, verdicts.get(i), self.config)
            turns = (attack, assess) if attack else (assess,)
            games.append(PlayedGame(seed, turns, verdicts.get(i), outcome))

        experiences = [e for i, game in enumerate(games) for e in _experiences(i, game, self.train_roles)]
        return GameBatch(
            experiences=experiences,
            games=games,
            metrics=game_metrics([g.outcome for g in games], stats),
            ties_removed=sum(g.outcome.dropped for g in games),
        )

    def _generate(self, prompts: list[list[Message]]) -> list[str]:
        """Generate, checking that the generator answered every prompt."""
        if not prompts:
            return []
        texts = list(self.generator.generate(prompts))
        if len(texts) != len(prompts):
            raise RuntimeError(
                f"{type(self.generator).__name__} returned {len(texts)} texts for {len(prompts)} prompts"
            )
        return texts

    def _attacker_turns(self, seeds: Sequence[GameSeed]) -> dict[int, Turn]:
        """The attacker's turn of every adversarial game, by game index (vanilla games have none)."""
        indices = [i for i, seed in enumerate(seeds) if seed.category.adversarial]
        prompts = [attacker_messages(seeds[i], self.config.benign_mode) for i in indices]
        texts = self._generate(prompts)
        return {
            i: Turn(Role.ATTACKER, prompt, text, parse_response(text).answer)
            for i, prompt, text in zip(indices, prompts, texts, strict=True)
        }

    def _judge(self, seeds: Sequence[GameSeed], attacks: dict[int, Turn]) -> tuple[dict[int, JudgeVerdict], JudgeStats]:
        """One batched judge call for all adversarial games; verdicts by game index."""
        indices = sorted(attacks)
        requests = [judge_request(seeds[i], attacks[i].response, self.config) for i in indices]
        verdicts, stats = call_judge(self.judge, [r for r in requests if r is not None])
        return dict(zip(indices, verdicts, strict=True)), stats
