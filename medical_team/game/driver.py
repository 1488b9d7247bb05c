"""The game driver: one game from its seed to the settled outcome, framework-free.

Training (verl's agent loop, one game per dataset row), validation, cross-play and the tests play
every game with `play_game`; they differ only in the generate and judge functions they pass (which
model answers, how it renders and cuts its prompt, how the judge is reached):

    game = await play_game(seed, generate, judge, config)
    game.turns       # the attacker's turn (adversarial games), then the assessor's; what generate returned
    game.outcome     # truth, verdict, both roles' rewards (`GameOutcome`), the input of `game_metrics`
    game.trace(...)  # the input of the collapse monitors and the step's game records
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from medical_team.common.vocab import Role
from medical_team.data.records import GameSeed
from medical_team.game.cot import parse_response
from medical_team.game.judging import JudgeRequest, JudgeVerdict
from medical_team.game.monitors import GameTrace
from medical_team.game.prompts import Message, assessor_messages, attacker_messages
from medical_team.game.settle import GameConfig, GameOutcome, judge_request, note_for_assessor, settle


class Generation(Protocol):
    """What a generate function returns for one turn: the response text, and whatever else its caller keeps."""

    @property
    def text(self) -> str:
        """The response as text, as the model wrote it after the prompt."""
        ...


G = TypeVar("G", bound=Generation)

# One turn's response to the chat messages of `role`. The function renders the messages (chat template
# and thinking prefix, `prompts.render_prompt`), cuts the prompt if it must, and generates.
GenerateFn = Callable[[Role, list[Message]], Awaitable[G]]
# The judge's verdict on one adversarial game (vanilla games take their truth from the data).
JudgeFn = Callable[[JudgeRequest], Awaitable[JudgeVerdict]]


@dataclass(frozen=True)
class Reply:
    """A generation that is text only (generators that keep no token ids)."""

    text: str


@dataclass(frozen=True)
class Turn(Generic[G]):
    """One turn of a game: who spoke, what they were shown, and what the generate function returned."""

    role: Role
    messages: list[Message]
    generation: G

    @property
    def response(self) -> str:
        """The raw response text."""
        return self.generation.text

    @property
    def answer(self) -> str:
        """The response's parsed answer (for the attacker, the note the assessor sees)."""
        return parse_response(self.response).answer


@dataclass(frozen=True)
class PlayedGame(Generic[G]):
    """A settled game: its seed, its turns in order, the note the assessor judged, and the outcome."""

    seed: GameSeed  # as played: its category decides whether the attacker plays
    turns: tuple[Turn[G], ...]
    note: str  # what the assessor read: the seed's text, or the attacker's parsed answer
    outcome: GameOutcome  # with what the judge settled: truth, faithfulness, its reason

    def turn(self, role: Role) -> Turn[G] | None:
        """The turn this role played, if any."""
        return next((t for t in self.turns if t.role is role), None)

    def trace(self, tokens: Callable[[Turn[G]], int], response_cap: int) -> GameTrace:
        """What the collapse monitors read of this game; `tokens` measures one turn's response."""
        attacker, assessor = self.turn(Role.ATTACKER), self.turns[-1]  # the assessor always speaks last
        return GameTrace(
            seed_text=self.seed.text,
            rewrite=None if attacker is None else self.note,
            attacker_tokens=None if attacker is None else tokens(attacker),
            assessor_tokens=tokens(assessor),
            response_cap=response_cap,
            assessor_response=assessor.response,
        )


async def _no_judge(request: JudgeRequest) -> JudgeVerdict:
    """The judge of a caller that plays vanilla games only: an adversarial game is a mistake."""
    raise ValueError(f"seed {request.seed.note_id} is {request.seed.category.value}: adversarial games need a judge")


async def play_game(
    seed: GameSeed,
    generate: GenerateFn[G],
    judge: JudgeFn = _no_judge,
    config: GameConfig | None = None,
) -> PlayedGame[G]:
    """Play one game: the attacker's turn (adversarial seeds), the assessor's turn, the judge's verdict, settled."""
    config = config or GameConfig()
    turns: list[Turn[G]] = []
    if seed.category.adversarial:
        messages = attacker_messages(seed, config.benign_mode)
        turns.append(Turn(Role.ATTACKER, messages, await generate(Role.ATTACKER, messages)))
    attacker_response = turns[0].response if turns else None
    note = note_for_assessor(seed, attacker_response)
    messages = assessor_messages(note)
    turns.append(Turn(Role.ASSESSOR, messages, await generate(Role.ASSESSOR, messages)))
    request = judge_request(seed, attacker_response, config)
    verdict = None if request is None else await judge(request)
    outcome = settle(seed, attacker_response, turns[-1].response, verdict, config)
    return PlayedGame(seed, tuple(turns), note, outcome)
