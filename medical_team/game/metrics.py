"""Per-step game metrics (docs/game.md, "Metrics"), with the same keys every step (empty groups report 0.0)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from medical_team.common.vocab import ERROR_TYPES, Category, Label
from medical_team.game.settle import GameOutcome, JudgeStats

ADVERSARIAL_CATEGORIES = tuple(c for c in Category if c.adversarial)


def metric_names() -> tuple[str, ...]:
    """Every key `game_metrics` returns, in a stable order."""
    return (
        *(f"game/count/{c.value}" for c in Category),
        "game/games",
        "game/ties_removed",
        "game/tie_rate",
        "game/error_note_rate",
        "assessor/accuracy",
        *(f"assessor/accuracy/{c.value}" for c in Category),
        *(f"assessor/recall/{t}" for t in ERROR_TYPES),
        "assessor/false_alarm_rate",
        "assessor/miss_rate",
        "assessor/sentence_accuracy",
        "assessor/reward_mean",
        "assessor/format_violation_rate",
        "assessor/error_verdict_rate",
        *(f"assessor/reward_mean/verdict_{v.value}" for v in Label),
        *(f"assessor/format_violation_rate/verdict_{v.value}" for v in Label),
        "attacker/success_rate",
        *(f"attacker/success_rate/{c.value}" for c in ADVERSARIAL_CATEGORIES),
        "attacker/faithfulness_rate",
        "attacker/reward_mean",
        "attacker/format_violation_rate",
        "attacker/judge_injection_rate",
        "judge/calls",
        "judge/parse_error_rate",
        "judge/latency_s",
    )


def _rate(items: Iterable[GameOutcome], hit: Callable[[GameOutcome], bool]) -> float:
    """Fraction of `items` for which `hit` holds; 0.0 for no items."""
    flags = [hit(o) for o in items]
    return sum(flags) / len(flags) if flags else 0.0


def _mean(values: Iterable[float | None]) -> float:
    """Mean of the values that are not None; 0.0 when there are none."""
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else 0.0


def _assessor_metrics(decided: list[GameOutcome], games: Sequence[GameOutcome]) -> dict[str, float]:
    """`assessor/*`: accuracy overall, per category and per error type, error rates, reward, format, per verdict."""
    errors = [o for o in decided if o.truth is Label.ERROR]
    clean = [o for o in decided if o.truth is Label.NO_ERROR]
    out = {"assessor/accuracy": _rate(decided, lambda o: bool(o.assessor_correct))}
    for c in Category:
        out[f"assessor/accuracy/{c.value}"] = _rate(
            (o for o in decided if o.category is c), lambda o: bool(o.assessor_correct)
        )
    for t in ERROR_TYPES:
        out[f"assessor/recall/{t}"] = _rate(
            (o for o in errors if o.error_type == t), lambda o: o.verdict is Label.ERROR
        )
    out["assessor/false_alarm_rate"] = _rate(clean, lambda o: o.verdict is not Label.NO_ERROR)
    out["assessor/miss_rate"] = _rate(errors, lambda o: o.verdict is not Label.ERROR)
    out["assessor/sentence_accuracy"] = _rate((o for o in errors if o.known_error_sentence), lambda o: o.sentence_match)
    out["assessor/reward_mean"] = _mean(o.assessor_reward for o in games)
    out["assessor/format_violation_rate"] = _rate(games, lambda o: not o.assessor_format_ok)
    # Per verdict: where a collapse onto one verdict comes from (say, one verdict's answers break the format more).
    out["assessor/error_verdict_rate"] = _rate(games, lambda o: o.verdict is Label.ERROR)
    for verdict in Label:
        said = [o for o in games if o.verdict is verdict]
        out[f"assessor/reward_mean/verdict_{verdict.value}"] = _mean(o.assessor_reward for o in said)
        out[f"assessor/format_violation_rate/verdict_{verdict.value}"] = _rate(said, lambda o: not o.assessor_format_ok)
    return out


def _attacker_metrics(adversarial: list[GameOutcome]) -> dict[str, float]:
    """`attacker/*`: success (assessor wrong) overall and per category, faithfulness, reward, format, forfeits."""
    decided = [o for o in adversarial if not o.tie]

    def won(o: GameOutcome) -> bool:
        return not o.assessor_correct and o.judge_injection is None

    out = {"attacker/success_rate": _rate(decided, won)}
    for c in ADVERSARIAL_CATEGORIES:
        out[f"attacker/success_rate/{c.value}"] = _rate((o for o in decided if o.category is c), won)
    out["attacker/faithfulness_rate"] = _rate(
        decided, lambda o: bool(o.faithful) and o.truth is o.intended and o.judge_injection is None
    )
    out["attacker/reward_mean"] = _mean(o.attacker_reward for o in adversarial)
    out["attacker/format_violation_rate"] = _rate(adversarial, lambda o: not o.attacker_format_ok)
    out["attacker/judge_injection_rate"] = _rate(adversarial, lambda o: o.judge_injection is not None)
    return out


def game_metrics(outcomes: Sequence[GameOutcome], judge_stats: JudgeStats | None = None) -> dict[str, float]:
    """Every metric of docs/game.md ("Metrics") for one step's games (keys: `metric_names()`).

    Rates over ties exclude them (the truth is unknown); format and reward metrics include every
    kept sample. `judge/calls` counts adversarial games (one judge request each) and
    `judge/latency_s` is the mean wall-clock seconds of one `Judge.judge` invocation.
    """
    decided = [o for o in outcomes if not o.tie]
    adversarial = [o for o in outcomes if o.adversarial]
    stats = judge_stats or JudgeStats()
    out: dict[str, float] = {f"game/count/{c.value}": float(sum(o.category is c for o in outcomes)) for c in Category}
    out["game/games"] = float(len(outcomes))
    out["game/ties_removed"] = float(sum(o.dropped for o in outcomes))
    out["game/tie_rate"] = _rate(outcomes, lambda o: o.tie)
    out["game/error_note_rate"] = _rate(decided, lambda o: o.truth is Label.ERROR)
    out.update(_assessor_metrics(decided, outcomes))
    out.update(_attacker_metrics(adversarial))
    out["judge/calls"] = float(len(adversarial))
    out["judge/parse_error_rate"] = _rate(adversarial, lambda o: o.judge_parse_error)
    out["judge/latency_s"] = stats.seconds / stats.invocations if stats.invocations else 0.0
    return {name: out[name] for name in metric_names()}
