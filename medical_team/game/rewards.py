"""Reward tables of docs/game.md ("Rewards"): `general_sum` (default), `zero_sum` and `difficulty_band`, per role and term.

These are the terms one game settles alone. In training, the step's games then get their step-level
terms (`medical_team.game.step_terms.with_step_terms`): the format term measured against the other
answers of the same kind, the verdict balance, and under `difficulty_band` the attacker's outcome term,
which depends on the assessor's success rate over several games.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from medical_team.common.vocab import Label

CORRECTNESS = 1.0  # assessor: verdict right / wrong
FAITHFULNESS = 0.5  # attacker (general_sum): faithful and realises the intended label / not
OUTCOME = 1.0  # attacker: assessor wrong / right
# Both roles: a response that breaks a format rule loses FORMAT (a compliant one loses nothing). Below each task
# term's half-gap, so a right answer scores above a wrong one whatever either's format (docs/game.md, "Rewards").
FORMAT = 0.5
# The assessor's verdict balance (step_terms.py): while one verdict's share of a step's readable verdicts is outside
# the band, each right answer with that verdict earns VERDICT_BALANCE more. 8 beats any format-break or truncation
# gap up to 0.5 on steps whose error-note share is in [0.375, 0.625] (the bound is in docs/game.md).
VERDICT_SHARE_BAND = (0.25, 0.75)
VERDICT_BALANCE = 8.0


class RewardScheme(str, Enum):
    """How the attacker's reward relates to the assessor's."""

    GENERAL_SUM = "general_sum"
    ZERO_SUM = "zero_sum"
    DIFFICULTY_BAND = "difficulty_band"  # general_sum with the outcome term settled per step (difficulty_band.py)


@dataclass(frozen=True)
class RewardConfig:
    """Reward settings: scheme, localisation bonus b, and whether tied games are dropped."""

    scheme: RewardScheme = RewardScheme.GENERAL_SUM
    localisation_bonus: float = 0.0
    remove_ties: bool = True

    def __post_init__(self) -> None:
        """Coerce the scheme from its string name and reject a negative or non-finite bonus."""
        try:
            object.__setattr__(self, "scheme", RewardScheme(self.scheme))
        except ValueError:
            names = ", ".join(s.value for s in RewardScheme)
            raise ValueError(f"reward scheme {self.scheme!r} is unknown; use one of: {names}") from None
        if not math.isfinite(self.localisation_bonus) or self.localisation_bonus < 0:
            raise ValueError(f"localisation_bonus must be a finite number >= 0, got {self.localisation_bonus!r}")


@dataclass(frozen=True)
class ScoreInputs:
    """Everything the reward tables look at for one game."""

    adversarial: bool
    truth: Label | None  # None when the game is a tie
    intended: Label  # the label the attacker was asked to realise (the seed label in vanilla games)
    verdict: Label | None  # the assessor's verdict; None when missing or unreadable (counts as wrong)
    faithful: bool | None  # the judge's faithfulness; None in vanilla games and ties
    assessor_format_ok: bool
    attacker_format_ok: bool  # ignored in vanilla games
    sentence_match: bool = False  # the assessor's quoted sentence is the known error sentence
    attacker_forfeits: bool = False  # the rewrite spoke to the judge (`judging.judge_injection`): a loss, tie or not


@dataclass(frozen=True)
class GameRewards:
    """Per-role reward terms of one game; `attacker_terms` is None when the attacker did not play."""

    assessor_terms: dict[str, float]
    attacker_terms: dict[str, float] | None

    @property
    def assessor(self) -> float:
        """The assessor's total reward."""
        return sum(self.assessor_terms.values())

    @property
    def attacker(self) -> float | None:
        """The attacker's total reward, or None in vanilla games."""
        return None if self.attacker_terms is None else sum(self.attacker_terms.values())


def _sign(condition: bool, value: float) -> float:
    """+value when the condition holds, else -value."""
    return value if condition else -value


def format_term(compliant: bool) -> float:
    """A game's format term: 0 for a compliant response, -FORMAT for one that breaks a rule."""
    return 0.0 if compliant else -FORMAT


def _forfeit_terms(scheme: RewardScheme) -> dict[str, float]:
    """The attacker's terms of a game it forfeits: the outcome lost, and under the schemes that score
    faithfulness, its label not realised."""
    terms = {"outcome": -OUTCOME}
    if scheme in (RewardScheme.GENERAL_SUM, RewardScheme.DIFFICULTY_BAND):
        terms["faithfulness"] = -FAITHFULNESS
    return terms


def score_game(inputs: ScoreInputs, config: RewardConfig) -> GameRewards:
    """Both roles' reward terms for one game.

    In a tie the truth is unknown, so only the format terms are scored (they matter only when
    ties are kept, `remove_ties=False`). An attacker that forfeits loses whatever the truth, tie or not.
    """
    assessor = {"format": format_term(inputs.assessor_format_ok)}
    attacker = {"format": format_term(inputs.attacker_format_ok)} if inputs.adversarial else None
    if attacker is not None and inputs.attacker_forfeits:
        attacker.update(_forfeit_terms(config.scheme))
    if inputs.truth is None:
        return GameRewards(assessor, attacker)

    right = inputs.verdict is not None and inputs.verdict is inputs.truth
    assessor["correctness"] = _sign(right, CORRECTNESS)
    both_error = inputs.truth is Label.ERROR and inputs.verdict is Label.ERROR
    assessor["localisation"] = config.localisation_bonus if both_error and inputs.sentence_match else 0.0
    if attacker is not None and not inputs.attacker_forfeits:
        if config.scheme is not RewardScheme.DIFFICULTY_BAND:  # the band's outcome needs the step's other games
            attacker["outcome"] = -assessor["correctness"] * (OUTCOME / CORRECTNESS)
        if config.scheme in (RewardScheme.GENERAL_SUM, RewardScheme.DIFFICULTY_BAND):
            realised = bool(inputs.faithful) and inputs.truth is inputs.intended
            attacker["faithfulness"] = _sign(realised, FAITHFULNESS)
    return GameRewards(assessor, attacker)
