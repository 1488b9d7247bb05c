"""One game, step by step: what the attacker must realise, what the assessor sees, and the settled outcome.

The game driver (`driver.play_game`) calls these functions in this order:

    note = note_for_assessor(seed, attacker_response)          # attacker_response None in vanilla games
    request = judge_request(seed, attacker_response, config)   # None in vanilla games
    verdicts, stats = call_judge(judge, [request])             # only for adversarial games
    outcome = settle(seed, attacker_response, assessor_response, verdict, config)

An assessor response scored alone against a note of known label (verl's validation reward, OpenRLHF's
reward) is a vanilla game settled the same way: `score_assessor(seed, response, rewards)`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from medical_team.common.vocab import BenignAttackMode, Category, Label, Role
from medical_team.data.records import GameSeed
from medical_team.game.answers import AssessorAnswer, parse_assessor_answer, sentence_matches
from medical_team.game.cot import ParsedResponse, parse_response
from medical_team.game.judging import Judge, JudgeRequest, JudgeVerdict, judge_injection
from medical_team.game.rewards import GameRewards, RewardConfig, ScoreInputs, score_game

UNREADABLE_VERDICT = "unreadable_verdict"  # listed with the format rules an assessor response breaks


@dataclass(frozen=True)
class GameConfig:
    """Settings of the game itself: rewards and what the attacker does with clean notes."""

    rewards: RewardConfig = field(default_factory=RewardConfig)
    benign_mode: BenignAttackMode = BenignAttackMode.INJECT

    def __post_init__(self) -> None:
        """Coerce the benign mode from its string name, naming the valid ones on failure."""
        try:
            object.__setattr__(self, "benign_mode", BenignAttackMode(self.benign_mode))
        except ValueError:
            names = ", ".join(m.value for m in BenignAttackMode)
            raise ValueError(f"benign_mode {self.benign_mode!r} is unknown; use one of: {names}") from None


@dataclass
class JudgeStats:
    """Wall-clock time spent in judge calls during one step (for `judge/latency_s`)."""

    invocations: int = 0  # calls of `Judge.judge`, whatever their batch size
    requests: int = 0
    seconds: float = 0.0
    gold_count: int = 0  # gold probes sent along with the games' requests (docs/judge.md)
    gold_correct: int = 0  # gold probes the judge answered right

    def merge(self, other: JudgeStats) -> JudgeStats:
        """The sum of two stats (e.g. from several workers)."""
        return JudgeStats(
            self.invocations + other.invocations,
            self.requests + other.requests,
            self.seconds + other.seconds,
            self.gold_count + other.gold_count,
            self.gold_correct + other.gold_correct,
        )


@dataclass(frozen=True)
class GameOutcome:
    """Everything settled about one game: truth, verdict, format, rewards. Plain values only."""

    note_id: str
    category: Category
    intended: Label  # the label the attacker was asked to realise (the seed label in vanilla games)
    truth: Label | None  # None in a tie
    verdict: Label | None  # the assessor's verdict; None when missing or unreadable
    tie: bool
    dropped: bool  # a tie whose samples are removed (`remove_ties`)
    faithful: bool | None  # the judge's faithfulness; None in vanilla games and ties
    judge_parse_error: bool
    judge_reason: str
    error_type: str | None  # the true error's MEDEC type when known
    known_error_sentence: str | None  # the sentence holding the true error when known
    sentence_match: bool  # verdict ERROR and the quoted sentence is the known error sentence
    assessor_violations: tuple[str, ...]  # FormatRule values, plus UNREADABLE_VERDICT
    attacker_violations: tuple[str, ...] | None  # None in vanilla games
    assessor_terms: dict[str, float]
    attacker_terms: dict[str, float] | None  # None in vanilla games
    judge_injection: str | None = None  # the rewrite's first line in the judge's language: the attacker forfeits

    @property
    def adversarial(self) -> bool:
        """True when the attacker played."""
        return self.category.adversarial

    @property
    def assessor_format_ok(self) -> bool:
        """True when the assessor's response is compliant and its verdict readable."""
        return not self.assessor_violations

    @property
    def attacker_format_ok(self) -> bool | None:
        """True when the attacker's response is compliant; None in vanilla games."""
        return None if self.attacker_violations is None else not self.attacker_violations

    @property
    def assessor_correct(self) -> bool | None:
        """Whether the verdict equals the truth (unreadable counts as wrong); None in a tie."""
        return None if self.truth is None else self.verdict is self.truth

    @property
    def game_rewards(self) -> GameRewards:
        """Both roles' reward terms, totalled by `GameRewards`."""
        return GameRewards(self.assessor_terms, self.attacker_terms)

    @property
    def assessor_reward(self) -> float | None:
        """The assessor's total reward; None when the game is dropped."""
        return None if self.dropped else self.game_rewards.assessor

    @property
    def attacker_reward(self) -> float | None:
        """The attacker's total reward; None in vanilla games and dropped games (a forfeit is never dropped)."""
        return None if self.dropped and self.judge_injection is None else self.game_rewards.attacker

    def reward(self, role: Role) -> float | None:
        """The total reward of `role`; None when that role has no sample (dropped game, attacker in a vanilla game)."""
        return self.attacker_reward if role is Role.ATTACKER else self.assessor_reward

    def to_record(self) -> dict[str, Any]:
        """JSON-able dict (enums as strings, tuples as lists); inverse of `from_record`."""
        out = asdict(self)
        for key in ("category", "intended", "truth", "verdict"):
            out[key] = None if out[key] is None else out[key].value
        for key in ("assessor_violations", "attacker_violations"):
            out[key] = None if out[key] is None else list(out[key])
        return out

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> GameOutcome:
        """Rebuild an outcome from `to_record` output."""
        values = dict(record)
        values["category"] = Category(values["category"])
        for key in ("intended", "truth", "verdict"):
            values[key] = None if values[key] is None else Label(values[key])
        for key in ("assessor_violations", "attacker_violations"):
            values[key] = None if values[key] is None else tuple(values[key])
        return cls(**{name: values[name] for name in cls.__dataclass_fields__ if name in values})


def intended_label(category: Category, benign_mode: BenignAttackMode = BenignAttackMode.INJECT) -> Label:
    """The label the note the assessor sees should have: the seed's, or what the attacker must realise."""
    if category is Category.ADVERSARIAL_BENIGN:
        return Label.ERROR if benign_mode is BenignAttackMode.INJECT else Label.NO_ERROR
    return category.seed_label


def _attack(seed: GameSeed, attacker_response: str | None) -> ParsedResponse | None:
    """The parsed attacker response of an adversarial game (None in vanilla games); checks it is there iff needed."""
    if not seed.category.adversarial:
        if attacker_response is not None:
            raise ValueError(f"seed {seed.note_id} is {seed.category.value}: vanilla games have no attacker turn")
        return None
    if attacker_response is None:
        raise ValueError(f"seed {seed.note_id} is {seed.category.value}: the attacker's response is required")
    return parse_response(attacker_response)


def note_for_assessor(seed: GameSeed, attacker_response: str | None) -> str:
    """The note the assessor judges: the seed copied as-is in vanilla games, else the attacker's parsed answer."""
    attack = _attack(seed, attacker_response)
    return seed.text if attack is None else attack.answer


def judge_request(seed: GameSeed, attacker_response: str | None, config: GameConfig) -> JudgeRequest | None:
    """What the judge must settle for this game; None in vanilla games (their label comes from the data)."""
    if not seed.category.adversarial:
        return None
    return JudgeRequest(
        seed=seed,
        intended_label=intended_label(seed.category, config.benign_mode),
        rewrite=note_for_assessor(seed, attacker_response),
    )


def call_judge(judge: Judge, requests: Sequence[JudgeRequest]) -> tuple[list[JudgeVerdict], JudgeStats]:
    """Run one batched judge call, timed; a judge that answers the wrong number of verdicts is a bug."""
    if not requests:
        return [], JudgeStats()
    start = time.perf_counter()
    verdicts = list(judge.judge(list(requests)))
    seconds = time.perf_counter() - start
    if len(verdicts) != len(requests):
        raise RuntimeError(f"{type(judge).__name__} returned {len(verdicts)} verdicts for {len(requests)} requests")
    return verdicts, JudgeStats(invocations=1, requests=len(requests), seconds=seconds)


def _known_error_sentence(seed: GameSeed, note: str, verdict: JudgeVerdict | None, truth: Label | None) -> str | None:
    """The sentence that holds the true error, when it is known (judge's word first, then the seed's)."""
    if truth is not Label.ERROR:
        return None
    if verdict is not None and verdict.error_sentence:
        return verdict.error_sentence
    if seed.label is not Label.ERROR or not seed.error_sentence:
        return None
    # a rewrite may have reworded the error sentence: the seed's is known only while it is still there
    if not seed.category.adversarial or " ".join(seed.error_sentence.split()) in " ".join(note.split()):
        return seed.error_sentence
    return None


def _truth(seed: GameSeed, verdict: JudgeVerdict | None) -> tuple[Label | None, bool | None]:
    """(truth, faithful) of a game: the data label in vanilla games, the judge's verdict otherwise."""
    if not seed.category.adversarial:
        if verdict is not None:
            raise ValueError(f"seed {seed.note_id} is {seed.category.value}: vanilla games take no judge verdict")
        return seed.label, None
    if verdict is None:
        raise ValueError(f"seed {seed.note_id} is {seed.category.value}: a judge verdict is required")
    if verdict.tie or verdict.error_present is None:
        return None, None
    return (Label.ERROR if verdict.error_present else Label.NO_ERROR), bool(verdict.faithful)


def settle(
    seed: GameSeed,
    attacker_response: str | None,
    assessor_response: str,
    verdict: JudgeVerdict | None,
    config: GameConfig,
) -> GameOutcome:
    """Settle one played game: parse both responses, take the truth, score both roles."""
    attack = _attack(seed, attacker_response)
    note = seed.text if attack is None else attack.answer
    truth, faithful = _truth(seed, verdict)
    attacker_violations = None if attack is None else tuple(rule.value for rule in attack.violations)
    parsed = parse_response(assessor_response)
    answer: AssessorAnswer = parse_assessor_answer(parsed.answer)
    assessor_violations = tuple(rule.value for rule in parsed.violations)
    if not answer.readable:
        assessor_violations += (UNREADABLE_VERDICT,)

    injection = None if attack is None else judge_injection(attack.answer)
    known_sentence = _known_error_sentence(seed, note, verdict, truth)
    matched = answer.verdict is Label.ERROR and sentence_matches(answer.sentence, known_sentence)
    intended = intended_label(seed.category, config.benign_mode)
    adversarial = attack is not None
    rewards = score_game(
        ScoreInputs(
            adversarial=adversarial,
            truth=truth,
            intended=intended,
            verdict=answer.verdict,
            faithful=faithful,
            assessor_format_ok=not assessor_violations,
            attacker_format_ok=not attacker_violations,
            sentence_match=matched,
            attacker_forfeits=injection is not None,
        ),
        config.rewards,
    )
    tie = adversarial and truth is None
    return GameOutcome(
        note_id=seed.note_id,
        category=seed.category,
        intended=intended,
        truth=truth,
        verdict=answer.verdict,
        tie=tie,
        dropped=tie and config.rewards.remove_ties,
        faithful=faithful,
        judge_parse_error=bool(verdict and verdict.parse_error),
        judge_reason=verdict.reason if verdict is not None else "data label",
        error_type=seed.error_type if truth is Label.ERROR and seed.label is Label.ERROR else None,
        known_error_sentence=known_sentence,
        sentence_match=matched,
        assessor_violations=assessor_violations,
        attacker_violations=attacker_violations,
        assessor_terms=rewards.assessor_terms,
        attacker_terms=rewards.attacker_terms,
        judge_injection=injection,
    )


@dataclass(frozen=True)
class AssessorScore:
    """One assessor response scored alone: its reward and the parts reward consumers log."""

    reward: float
    format_ok: bool
    correct: bool
    sentence_match: bool


def as_vanilla(seed: GameSeed) -> GameSeed:
    """The seed played as a vanilla game: the assessor judges the seed note itself."""
    return replace(seed, category=Category.of(seed.label, adversarial=False))


def score_assessor(seed: GameSeed, response: str, rewards: RewardConfig) -> AssessorScore:
    """The assessor's reward for `response` on `seed`'s own note, whatever its category: a vanilla game, settled.

    verl's validation reward (`agent_loop/reward_fn.py`) and OpenRLHF's (`judge/openrlhf_rewards.py`: the
    judge server's `POST /judge` and the reward-function file) score through here, so they give the
    reward self-play gives the assessor in a vanilla game.
    """
    outcome = settle(as_vanilla(seed), None, response, None, GameConfig(rewards=rewards))
    return AssessorScore(
        reward=float(outcome.game_rewards.assessor),
        format_ok=outcome.assessor_format_ok,
        correct=bool(outcome.assessor_correct),
        sentence_match=outcome.sentence_match,
    )
