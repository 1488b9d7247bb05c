"""A step's figures made comparable: per second, per token generated or trained, and ratios, from a run's medians
(the step, step-variants and GPU parts of the benchmarks)."""

from __future__ import annotations

from typing import Any


def per_second(count: float | None, seconds: float | None) -> float | None:
    """count / seconds, or None when either is unknown."""
    return round(count / seconds, 3) if count and seconds else None


def per_token(step_s: float | None, tokens: float | None) -> float | None:
    """Milliseconds of a step per token, or None when either is unknown."""
    return round(1000 * step_s / tokens, 4) if step_s and tokens else None


def quotient(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator to three places, or None when either is unknown."""
    return round(numerator / denominator, 3) if numerator and denominator else None


def generated_tokens(run: dict[str, Any], rows: float | None) -> float | None:
    """Tokens a step generated: the mean response length of its update batch times its rows."""
    mean = run.get("response_length_mean")
    return mean * rows if mean and rows else None


def samples_per_step(run: dict[str, Any], stock_samples: int | None = None) -> float | None:
    """Training samples per step: attacker + assessor rows (self-play) or the stock run's prompts x rollout.n."""
    if stock_samples is not None:
        return float(stock_samples)
    if run.get("samples_attacker") is None or run.get("samples_assessor") is None:
        return None
    return run["samples_attacker"] + run["samples_assessor"]
