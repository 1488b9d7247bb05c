"""Score a judge against gold items: accuracy, precision/recall per error type, faithfulness, parse errors, latency."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from medical_team.common.vocab import ERROR_TYPES
from medical_team.game.judging import Judge, JudgeVerdict
from medical_team.judge.gold import GOLD_KINDS, GoldItem

ANSWERS = ("yes", "no", "tie")  # columns of a confusion table: what the judge answered


@dataclass(frozen=True)
class AuditThresholds:
    """What a judge must reach on the gold items before it settles training games (docs/judge.md)."""

    error_accuracy: float = 0.85
    error_precision: float = 0.80
    error_recall: float = 0.80
    faithful_accuracy: float = 0.80
    max_parse_error_rate: float = 0.02

    def failures(self, metrics: dict[str, Any]) -> list[str]:
        """One line per threshold the metrics miss (empty when the judge passes)."""
        checks = [
            ("error_present accuracy", metrics["error_present"]["accuracy"], self.error_accuracy, True),
            ("error_present precision", metrics["error_present"]["precision"], self.error_precision, True),
            ("error_present recall", metrics["error_present"]["recall"], self.error_recall, True),
            ("faithful accuracy", metrics["faithful"]["accuracy"], self.faithful_accuracy, True),
            ("parse error rate", metrics["parse_error_rate"], self.max_parse_error_rate, False),
        ]
        return [
            f"{name} {value:.3f} {'<' if at_least else '>'} {bound:.3f}"
            for name, value, bound, at_least in checks
            if (value < bound if at_least else value > bound)
        ]


@dataclass
class AuditRun:
    """The verdicts a judge gave on the gold items, with the wall time of each batch."""

    items: list[GoldItem]
    verdicts: list[JudgeVerdict] = field(default_factory=list)
    batch_seconds: list[float] = field(default_factory=list)


def run_audit(judge: Judge, items: Sequence[GoldItem], batch_size: int = 16) -> AuditRun:
    """Ask `judge` about every gold item, `batch_size` requests per call, timing each call."""
    run = AuditRun(list(items))
    for start in range(0, len(items), batch_size):
        chunk = items[start : start + batch_size]
        began = time.perf_counter()
        verdicts = judge.judge([item.request for item in chunk])
        run.batch_seconds.append(time.perf_counter() - began)
        if len(verdicts) != len(chunk):
            raise RuntimeError(f"{type(judge).__name__} returned {len(verdicts)} verdicts for {len(chunk)} requests")
        run.verdicts.extend(verdicts)
    return run


def _answer(value: bool | None, tie: bool) -> str:
    return "tie" if tie or value is None else ("yes" if value else "no")


def confusion(
    truths: Sequence[bool], answers: Sequence[bool | None], ties: Sequence[bool]
) -> dict[str, dict[str, int]]:
    """Counts of truth (`yes`/`no`) x answer (`yes`/`no`/`tie`)."""
    table = {truth: dict.fromkeys(ANSWERS, 0) for truth in ("yes", "no")}
    for truth, answer, tie in zip(truths, answers, ties, strict=True):
        table["yes" if truth else "no"][_answer(answer, tie)] += 1
    return table


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else 0.0


def binary_scores(table: dict[str, dict[str, int]]) -> dict[str, float | int]:
    """Accuracy, precision and recall of the `yes` answer from a confusion table (a tie counts as wrong)."""
    tp, fn_no, fn_tie = table["yes"]["yes"], table["yes"]["no"], table["yes"]["tie"]
    fp, tn, tie_no = table["no"]["yes"], table["no"]["no"], table["no"]["tie"]
    total = tp + fn_no + fn_tie + fp + tn + tie_no
    return {
        "count": total,
        "positives": tp + fn_no + fn_tie,
        "accuracy": _ratio(tp + tn, total),
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn_no + fn_tie),
    }


def _error_table(pairs: Sequence[tuple[GoldItem, JudgeVerdict]]) -> dict[str, dict[str, int]]:
    return confusion(
        [i.error_present for i, _ in pairs], [v.error_present for _, v in pairs], [v.tie for _, v in pairs]
    )


def audit_metrics(run: AuditRun) -> dict[str, Any]:
    """Every figure of the audit as JSON-able values."""
    pairs = list(zip(run.items, run.verdicts, strict=True))
    error_table = _error_table(pairs)
    faithful_table = confusion(
        [i.faithful for i, _ in pairs], [v.faithful for _, v in pairs], [v.tie for _, v in pairs]
    )
    types = [t for t in ERROR_TYPES if any(i.error_type == t for i in run.items)]
    types += sorted({i.error_type for i in run.items} - set(types))
    count = len(pairs)
    seconds = sum(run.batch_seconds)
    return {
        "items": count,
        "accuracy": _ratio(sum(i.correct(v) for i, v in pairs), count),  # both answers right
        "error_present": {**binary_scores(error_table), "confusion": error_table},
        "error_present_by_type": {
            t: binary_scores(_error_table([(i, v) for i, v in pairs if i.error_type == t])) for t in types
        },
        "faithful": {**binary_scores(faithful_table), "confusion": faithful_table},
        "by_kind": {
            kind: {
                "count": len(members),
                "error_present_accuracy": _ratio(sum(i.error_correct(v) for i, v in members), len(members)),
                "faithful_accuracy": _ratio(sum(i.faithful_correct(v) for i, v in members), len(members)),
            }
            for kind in GOLD_KINDS
            if (members := [(i, v) for i, v in pairs if i.kind == kind])
        },
        "parse_error_rate": _ratio(sum(v.parse_error for _, v in pairs), count),
        "tie_rate": _ratio(sum(v.tie for _, v in pairs), count),
        "rule_decided_rate": _ratio(sum(v.reason.startswith("rule:") for _, v in pairs), count),
        "latency": {
            "total_s": seconds,
            "batches": len(run.batch_seconds),
            "mean_batch_s": _ratio_f(seconds, len(run.batch_seconds)),
            "max_batch_s": max(run.batch_seconds, default=0.0),
            "per_item_s": _ratio_f(seconds, count),
        },
    }


def _ratio_f(numerator: float, denominator: int) -> float:
    return numerator / denominator if denominator else 0.0


def gold_counts(items: Sequence[GoldItem]) -> dict[str, Any]:
    """What the gold set holds: items per kind, per error type, and how many have each known answer."""
    return {
        "items": len(items),
        "pairs": len({item.request.seed.pair_id for item in items}),
        "by_kind": {kind: sum(item.kind == kind for item in items) for kind in GOLD_KINDS},
        "by_type": {t: sum(item.error_type == t for item in items) for t in sorted({i.error_type for i in items})},
        "error_present_yes": sum(item.error_present for item in items),
        "faithful_yes": sum(item.faithful for item in items),
    }
