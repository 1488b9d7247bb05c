"""The reward terms a game gets from the other games of its step: what one game alone cannot settle.

`score_game` settles one game's terms; before the advantages, the trainer hands the step's games to
`with_step_terms`, which changes them so that no verdict is favoured by anything but being right
(docs/game.md, "Rewards" and "Why the reward is built this way"):

- **Format, against answers of the same kind.** A response's format term becomes the game's term minus
  the mean format term of the step's responses of the same role and kind (`answer_kind`: the assessor's
  verdict; whether the attacker's rewrite realised its intended label). Within a kind a compliant
  response still beats a broken one by FORMAT, but a kind that breaks the rules more often (`ERROR`
  answers are longer) no longer scores lower on average, so the format cannot push the policy towards
  one verdict. Responses with no kind (an unreadable verdict, a tied game) keep their game term.
- **Verdict balance.** While one verdict's share of the step's readable assessor verdicts is outside
  VERDICT_SHARE_BAND, each right answer with that rare verdict earns VERDICT_BALANCE more: a push back
  strong enough to beat any format-break or truncation gap up to 0.5 on steps whose error-note share is
  within 0.125 of even.
- **The difficulty band** (`difficulty_band` scheme only): the attacker's outcome term (difficulty_band.py).

A step's shares are measured from its games (`step_shares`); a test may hand in the shares of a
whole population of games instead, which is what an infinitely large step would measure.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from medical_team.common.vocab import Label, Role
from medical_team.game.difficulty_band import with_band_outcomes
from medical_team.game.monitors import error_verdict_share
from medical_team.game.rewards import VERDICT_BALANCE, VERDICT_SHARE_BAND, RewardConfig, RewardScheme, format_term
from medical_team.game.settle import GameOutcome

REALISED, MISSED = "realised", "missed"  # the attacker's answer kinds


def answer_kind(outcome: GameOutcome, role: Role) -> str | None:
    """The kind of a role's response whose format it is compared with: the assessor's verdict, or whether
    the attacker's rewrite has the truth it was asked to realise; None when it has none (unreadable, a tie, a
    forfeit: its terms are fixed)."""
    if role is Role.ASSESSOR:
        return None if outcome.verdict is None else outcome.verdict.value
    if not outcome.adversarial or outcome.truth is None or outcome.judge_injection is not None:
        return None
    return REALISED if outcome.truth is outcome.intended else MISSED


def _format_ok(outcome: GameOutcome, role: Role) -> bool:
    """Whether the role's response broke no format rule."""
    return bool(outcome.attacker_format_ok if role is Role.ATTACKER else outcome.assessor_format_ok)


@dataclass(frozen=True)
class StepShares:
    """What the step-level terms read of a step: each answer kind's compliance, and the assessor's ERROR share."""

    compliance: Mapping[tuple[Role, str], float]  # (role, answer kind) -> share of its responses that broke no rule
    error_share: float | None  # ERROR among readable verdicts (monitors.error_verdict_share); None below two of them


def step_shares(outcomes: Sequence[GameOutcome]) -> StepShares:
    """The shares of the step's games that train (dropped ties left out)."""
    kept = [game for game in outcomes if not game.dropped]
    counts: dict[tuple[Role, str], list[int]] = defaultdict(lambda: [0, 0])  # [compliant, all]
    for game in kept:
        for role in (Role.ASSESSOR, Role.ATTACKER):
            kind = answer_kind(game, role)
            if kind is not None:
                counts[(role, kind)][0] += _format_ok(game, role)
                counts[(role, kind)][1] += 1
    return StepShares(
        compliance={key: ok / total for key, (ok, total) in counts.items()},
        error_share=error_verdict_share(kept),
    )


def rare_verdict(error_share: float | None) -> Label | None:
    """The verdict whose share of the step's readable verdicts is below the band, if one is."""
    if error_share is None:
        return None
    low, high = VERDICT_SHARE_BAND
    if error_share < low:
        return Label.ERROR
    if error_share > high:
        return Label.NO_ERROR
    return None


def _centred_format(terms: dict[str, float], game: GameOutcome, role: Role, shares: StepShares) -> dict[str, float]:
    """The role's terms with the format term measured against the mean of its answer kind's in the step."""
    kind = answer_kind(game, role)
    if kind is None:
        return terms
    kind_mean = format_term(False) * (1.0 - shares.compliance[(role, kind)])
    return {**terms, "format": terms["format"] - kind_mean}


def with_step_terms(
    outcomes: Sequence[GameOutcome], config: RewardConfig, shares: StepShares | None = None
) -> list[GameOutcome]:
    """The step's games with their step-level terms (dropped games unchanged); `shares` default to the step's own."""
    if config.scheme is RewardScheme.DIFFICULTY_BAND:
        outcomes = with_band_outcomes(outcomes)
    shares = step_shares(outcomes) if shares is None else shares
    rare = rare_verdict(shares.error_share)
    out = []
    for game in outcomes:
        if game.dropped:
            out.append(game)
            continue
        assessor = _centred_format(game.assessor_terms, game, Role.ASSESSOR, shares)
        if game.truth is not None:
            assessor["balance"] = VERDICT_BALANCE if game.assessor_correct and game.verdict is rare else 0.0
        attacker = None
        if game.attacker_terms is not None:
            attacker = _centred_format(game.attacker_terms, game, Role.ATTACKER, shares)
        out.append(replace(game, assessor_terms=assessor, attacker_terms=attacker))
    return out
