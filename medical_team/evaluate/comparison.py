"""Evaluations of several checkpoints on the same benchmark notes, side by side, with paired statistics.

`medplay compare --eval NAME=DIR ...` reads each `DIR/eval.json` (written by `medplay eval`), scores
every note again against the benchmark's ground truth and writes `compare.json` and `compare.md`
(`--stem` names them otherwise):
per evaluation the flag and error-sentence accuracy with 95 % Wilson intervals, the format violation
rate and the verdict confusion matrix; per pair of evaluations (each against the one before it and
against the first) exact McNemar p-values on the notes one got right and the other wrong.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medical_team.common.errors import UserInputError
from medical_team.evaluate.benchmark import load_benchmark
from medical_team.evaluate.gold import GoldNote
from medical_team.evaluate.predictions import NotePrediction
from medical_team.evaluate.scoring import flag_correct, sentence_correct

EVAL_JSON = "eval.json"
DEFAULT_STEM = "compare"
Z95 = 1.959963984540054  # the standard normal's 97.5 % quantile
VERDICTS = ("ERROR", "NO_ERROR", "unreadable")


def wilson_interval(hits: int, total: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (hits of total); (0, 1) when total is 0."""
    if total == 0:
        return 0.0, 1.0
    share = hits / total
    centre = share + z * z / (2 * total)
    spread = z * math.sqrt(share * (1 - share) / total + z * z / (4 * total * total))
    scale = 1 + z * z / total
    return max(0.0, (centre - spread) / scale), min(1.0, (centre + spread) / scale)


def mcnemar_exact(only_first: int, only_second: int) -> float:
    """Two-sided exact McNemar p-value: a binomial test (p = 1/2) on the discordant pairs."""
    discordant = only_first + only_second
    if discordant == 0:
        return 1.0
    tail = sum(math.comb(discordant, k) for k in range(min(only_first, only_second) + 1))
    return min(1.0, 2 * tail / 2**discordant)


@dataclass(frozen=True)
class Rung:
    """One evaluation: its name, where it came from, and per note whether flag and sentence were right."""

    name: str
    source: str
    text_ids: tuple[str, ...]
    flag_right: tuple[bool, ...]
    sentence_right: tuple[bool, ...]
    violations: tuple[bool, ...]
    verdicts: tuple[tuple[bool, str], ...]  # (gold has an error, verdict) per note

    def summary(self) -> dict[str, Any]:
        """Rates with intervals, violation rate, the confusion matrix and the majority verdict's share."""
        confusion = {
            gold: {verdict: sum(1 for g, v in self.verdicts if g == has_error and v == verdict) for verdict in VERDICTS}
            for gold, has_error in (("gold_error", True), ("gold_clean", False))
        }
        counts = Counter(verdict for _, verdict in self.verdicts)
        return {
            "name": self.name,
            "eval": self.source,
            "notes": len(self.text_ids),
            "flag_accuracy": _rate(self.flag_right),
            "error_sentence_accuracy": _rate(self.sentence_right),
            "format_violation_rate": _rate(self.violations),
            "verdicts": confusion,
            "majority_verdict": counts.most_common(1)[0][0] if counts else None,
            "majority_verdict_share": max(counts.values()) / len(self.verdicts) if counts else None,
        }


def _rate(hits: Sequence[bool]) -> dict[str, Any]:
    """A proportion with its count and 95 % Wilson interval."""
    count, total = sum(hits), len(hits)
    low, high = wilson_interval(count, total)
    return {"value": count / total if total else None, "count": count, "ci95": [round(low, 4), round(high, 4)]}


def _verdict(prediction: NotePrediction) -> str:
    """ERROR, NO_ERROR or unreadable."""
    return "unreadable" if prediction.flag is None else ("ERROR" if prediction.flag else "NO_ERROR")


def read_rung(name: str, folder: Path, golds: dict[str, GoldNote] | None = None) -> Rung:
    """One `medplay eval` output folder scored against its benchmark (or the given ground truth)."""
    path = folder / EVAL_JSON
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserInputError("not found; give a folder written by `medplay eval`", file=str(path)) from None
    except json.JSONDecodeError as error:
        raise UserInputError(f"not JSON ({error.msg})", file=str(path), row=error.lineno) from None
    for key in ("benchmark", "predictions"):
        if key not in result:
            raise UserInputError("missing; was this written by `medplay eval`?", file=str(path), field=key)
    if golds is None:
        golds = {gold.text_id: gold for gold in load_benchmark(result["benchmark"]).golds}
    predictions = [NotePrediction.from_json(p) for p in result["predictions"]]
    unknown = [p.text_id for p in predictions if p.text_id not in golds]
    if unknown:
        raise UserInputError(f"note {unknown[0]} is not in the benchmark", file=str(path), field="predictions")
    pairs = [(p, golds[p.text_id]) for p in predictions]
    return Rung(
        name=name,
        source=str(folder),
        text_ids=tuple(p.text_id for p in predictions),
        flag_right=tuple(flag_correct(p, g) for p, g in pairs),
        sentence_right=tuple(sentence_correct(p, g) for p, g in pairs),
        violations=tuple(p.format_violation for p in predictions),
        verdicts=tuple((g.error_flag, _verdict(p)) for p, g in pairs),
    )


def paired(first: Rung, second: Rung) -> dict[str, Any]:
    """McNemar's exact test of flag and of sentence accuracy between two evaluations of the same notes."""
    out: dict[str, Any] = {"first": first.name, "second": second.name}
    for metric in ("flag_right", "sentence_right"):
        a, b = getattr(first, metric), getattr(second, metric)
        only_first = sum(x and not y for x, y in zip(a, b, strict=True))
        only_second = sum(y and not x for x, y in zip(a, b, strict=True))
        out[metric.replace("_right", "")] = {
            "only_first_right": only_first,
            "only_second_right": only_second,
            "difference": (sum(b) - sum(a)) / len(a) if a else None,
            "mcnemar_p": mcnemar_exact(only_first, only_second),
        }
    return out


def compare(rungs: Sequence[Rung]) -> dict[str, Any]:
    """Every rung's summary and the paired tests (each rung against the one before it and against the first)."""
    if not rungs:
        raise UserInputError("nothing to compare; give at least one --eval NAME=DIR", field="--eval")
    for rung in rungs[1:]:
        if rung.text_ids != rungs[0].text_ids:
            other = sorted(set(rung.text_ids) ^ set(rungs[0].text_ids)) or ["none (another order)"]
            raise UserInputError(
                f"scored other notes than {rungs[0].name} ({len(rung.text_ids)} vs {len(rungs[0].text_ids)}, "
                f"first note in one only: {other[0]}); evaluate every checkpoint on the same benchmark and --limit",
                file=str(Path(rung.source) / EVAL_JSON),
                field="predictions",
            )
    pairs = [(rungs[i - 1], rungs[i]) for i in range(1, len(rungs))]
    pairs += [(rungs[0], rung) for rung in rungs[2:]]
    return {"rungs": [rung.summary() for rung in rungs], "paired": [paired(a, b) for a, b in pairs]}


def _cell(rate: dict[str, Any]) -> str:
    """`0.425 [0.29, 0.57]`."""
    if rate["value"] is None:
        return "–"
    low, high = rate["ci95"]
    return f"{rate['value']:.3f} [{low:.2f}, {high:.2f}]"


def markdown(result: dict[str, Any]) -> str:
    """The comparison as Markdown tables."""
    header = (
        "| rung | notes | flag accuracy [95 % CI] | sentence accuracy [95 % CI] | format violations | "
        "verdicts ERROR / NO_ERROR / unreadable (gold error; gold clean) |"
    )
    lines = [header, "|---|---|---|---|---|---|"]
    for rung in result["rungs"]:
        v = rung["verdicts"]
        verdicts = "; ".join(" / ".join(str(v[gold][k]) for k in VERDICTS) for gold in ("gold_error", "gold_clean"))
        lines.append(
            f"| {rung['name']} | {rung['notes']} | {_cell(rung['flag_accuracy'])} | "
            f"{_cell(rung['error_sentence_accuracy'])} | {_cell(rung['format_violation_rate'])} | {verdicts} |"
        )
    lines += ["", "| pair | flag: only first / only second right, McNemar p | sentence: the same |", "|---|---|---|"]
    for pair in result["paired"]:
        cells = [
            f"{pair[m]['only_first_right']} / {pair[m]['only_second_right']}, p = {pair[m]['mcnemar_p']:.3g}"
            for m in ("flag", "sentence")
        ]
        lines.append(f"| {pair['first']} → {pair['second']} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines) + "\n"


def write_comparison(result: dict[str, Any], output: Path, stem: str = DEFAULT_STEM) -> tuple[Path, Path]:
    """Write `<stem>.json` and `<stem>.md` into `output`."""
    output.mkdir(parents=True, exist_ok=True)
    json_path, md_path = output / f"{stem}.json", output / f"{stem}.md"
    json_path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    md_path.write_text(markdown(result), encoding="utf-8")
    return json_path, md_path
