"""A training run's figures read from verl's metrics JSONL: medians per step after the warm-up steps, by phase."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from medical_team.evaluate.metrics_log import read_metrics

# verl's phase timers (`timing_s/<name>`) reported per phase; `gen` includes the agent loop's judge calls.
PHASES = ("gen", "reward", "old_log_prob", "ref", "adv", "update_actor", "update_weights")


def _median(values: list[float]) -> float | None:
    """Median of the values, or None when there are none."""
    return statistics.median(values) if values else None


def summarise_metrics(metrics_file: Path, skip_steps: int) -> dict[str, Any]:
    """Median per-step figures from verl's metrics JSONL, leaving out the first `skip_steps` (warm-up) steps."""
    history = read_metrics(metrics_file)
    kept = history.steps[skip_steps:] or history.steps

    def median_of(name: str) -> float | None:
        steps, values = history.series(name)
        return _median([v for s, v in zip(steps, values) if s in kept])

    _, reserved = history.series("actor/perf/max_memory_reserved_gb")
    judge_calls, judge_latency = median_of("judge/calls"), median_of("judge/latency_s")
    untimed = [
        row["timing_s/step"] - sum(row.get(f"timing_s/{phase}", 0.0) for phase in PHASES)
        for step, row in history.rows.items()
        if step in kept and "timing_s/step" in row
    ]
    return {
        "steps_logged": len(history.steps),
        "peak_device_memory_reserved_gib": max(reserved) if reserved else None,
        "steps_measured": kept,
        "step_s": median_of("timing_s/step"),
        "phase_s": {phase: median_of(f"timing_s/{phase}") for phase in PHASES},
        "outside_phases_s": _median(untimed),  # step time no phase timer covers (metrics, buffer waits)
        "tokens_per_step": median_of("perf/total_num_tokens"),
        "tokens_per_s": median_of("perf/throughput"),
        "samples_attacker": median_of("samples/attacker"),
        "samples_assessor": median_of("samples/assessor"),
        "judge_latency_s": judge_latency,
        "judge_calls": judge_calls,
        # One judge invocation per adversarial game; they overlap inside timing_s/gen, so this is an upper bound.
        "judge_s_per_step": judge_calls * judge_latency
        if judge_calls is not None and judge_latency is not None
        else None,
        "games": median_of("game/games"),
        "response_length_mean": median_of("response_length/mean"),
        "prompt_length_mean": median_of("prompt_length/mean"),
    }
