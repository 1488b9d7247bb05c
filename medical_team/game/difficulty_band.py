"""The `difficulty_band` reward scheme's outcome term: reward rewrites the assessor gets wrong sometimes, not always.

The attacker's outcome term is `band_outcome(p) = OUTCOME · 2 · min(p, 1 − p)`, where `p` is the
assessor's success rate (verdict right) on the games of the same seed in the step; when the seed
was decided in fewer than two games of the step (one sample per seed, `rollout.n = 1`), `p` is the
step's assessor success rate on the decided games of the seed's category. The term is 0 when the
assessor is always right (p = 1: the rewrite is too easy) and when it is always wrong (p = 0: the
rewrite is hopeless or broken), and OUTCOME at p = 0.5, in the spirit of Absolute Zero's `1 − p`
with zeros at both ends and R-Zero's solve-rate band.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

from medical_team.common.vocab import Category
from medical_team.game.rewards import OUTCOME
from medical_team.game.settle import GameOutcome

MIN_SEED_GAMES = 2  # decided games of one seed needed to use the seed's own rate


def band_outcome(success_rate: float) -> float:
    """The attacker's outcome term for an assessor success rate `p` in [0, 1]: OUTCOME · 2 · min(p, 1 − p)."""
    if not 0.0 <= success_rate <= 1.0:
        raise ValueError(f"a success rate lies in [0, 1], got {success_rate!r}")
    return OUTCOME * 2.0 * min(success_rate, 1.0 - success_rate)


def _rate(games: Sequence[GameOutcome]) -> float:
    """Share of the games the assessor got right."""
    return sum(bool(g.assessor_correct) for g in games) / len(games)


def assessor_success_rates(outcomes: Sequence[GameOutcome]) -> list[float | None]:
    """Per game, the assessor success rate its band term uses (None for vanilla games and ties)."""
    decided = [o for o in outcomes if o.adversarial and not o.tie]
    by_seed: dict[tuple[str, Category], list[GameOutcome]] = defaultdict(list)
    by_category: dict[Category, list[GameOutcome]] = defaultdict(list)
    for game in decided:
        by_seed[(game.note_id, game.category)].append(game)
        by_category[game.category].append(game)
    rates: list[float | None] = []
    for game in outcomes:
        if not game.adversarial or game.tie:
            rates.append(None)
            continue
        seed_games = by_seed[(game.note_id, game.category)]
        rates.append(_rate(seed_games if len(seed_games) >= MIN_SEED_GAMES else by_category[game.category]))
    return rates


def with_band_outcomes(outcomes: Sequence[GameOutcome]) -> list[GameOutcome]:
    """The games with the attacker's `outcome` term set to the band term (vanilla games, ties, forfeits unchanged)."""
    out = []
    for game, rate in zip(outcomes, assessor_success_rates(outcomes), strict=True):
        if rate is None or game.attacker_terms is None or game.judge_injection is not None:
            out.append(game)
        else:
            out.append(replace(game, attacker_terms={**game.attacker_terms, "outcome": band_outcome(rate)}))
    return out
