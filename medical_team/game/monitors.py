"""Collapse monitors of one step's games: attacker diversity and edit size, response lengths, verdict shares.

Self-play fails in known ways: the attacker repeats one rewrite or copies the seed, a role's
responses shrink or run into the length cap, the assessor answers the same verdict to everything.
`collapse_monitors` measures each of these over one step's games; `CollapseAlarm` (alarm.py)
watches them over steps. Self-BLEU uses NLTK's BLEU (`nltk.translate.bleu_score`); edit size uses
the standard library's `difflib`.
"""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from medical_team.common.vocab import Label
from medical_team.game.settle import GameOutcome

DISTINCT_ORDERS = (1, 2)
MIN_READABLE_VERDICTS = 2  # readable verdicts a step needs before its verdict shares are measured
_WORD = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class GameTrace:
    """One played game besides its outcome: its texts and response lengths (the monitors; the step's game records)."""

    seed_text: str
    rewrite: str | None  # the note the attacker wrote (its parsed answer); None in vanilla games
    attacker_tokens: int | None  # response tokens of the attacker's turn; None in vanilla games
    assessor_tokens: int
    response_cap: int  # the most response tokens one turn may have (a turn this long hit the cap)
    assessor_response: str  # the assessor's raw response (`game_records.py`; the monitors do not read it)

    def to_record(self) -> dict[str, Any]:
        """JSON-able dict; inverse of `from_record`."""
        return asdict(self)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> GameTrace:
        """Rebuild a trace from `to_record` output."""
        return cls(**{name: record[name] for name in cls.__dataclass_fields__})


@dataclass(frozen=True)
class MonitorReading:
    """One step's monitor values (every name of `monitor_names()`, 0.0 when unmeasured) and which were measured."""

    values: dict[str, float]
    measured: frozenset[str]


def _length_names(role: str) -> tuple[str, ...]:
    """The response-length monitors of one role."""
    return tuple(f"{role}/response_length/{stat}" for stat in ("mean", "p90", "clip_rate"))


def error_verdict_share(outcomes: Sequence[GameOutcome]) -> float | None:
    """`ERROR` verdicts over the games' readable verdicts; None below MIN_READABLE_VERDICTS of them."""
    verdicts = Counter(o.verdict for o in outcomes if o.verdict is not None)
    readable = sum(verdicts.values())
    return verdicts[Label.ERROR] / readable if readable >= MIN_READABLE_VERDICTS else None


def monitor_names() -> tuple[str, ...]:
    """Every key `collapse_monitors` returns, in a stable order."""
    return (
        *(f"attacker/distinct_{n}" for n in DISTINCT_ORDERS),
        "attacker/self_bleu",
        "attacker/edit_distance",
        "attacker/copy_rate",
        *_length_names("attacker"),
        *_length_names("assessor"),
        "assessor/majority_verdict_share",
        "assessor/error_verdict_share",
    )


def words(text: str) -> list[str]:
    """Lower-cased word and punctuation tokens of a note."""
    return _WORD.findall(text.lower())


def distinct_n(texts: Sequence[list[str]], n: int) -> float:
    """Distinct n-grams over all n-grams of the texts (Li et al., 2016); 0.0 when there is none."""
    grams = [tuple(tokens[i : i + n]) for tokens in texts for i in range(len(tokens) - n + 1)]
    return len(set(grams)) / len(grams) if grams else 0.0


def self_bleu(texts: Sequence[list[str]], max_texts: int) -> float:
    """Mean BLEU-4 of each text against all the others as references (Zhu et al., 2018), over the first `max_texts`.

    NLTK's sentence BLEU with its `method1` smoothing (a zero n-gram count becomes a small epsilon),
    so short texts do not all score 0. Empty texts are left out; fewer than two texts give 0.0.
    """
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    kept = [tokens for tokens in texts if tokens][:max_texts]
    if len(kept) < 2:
        return 0.0
    smoothing = SmoothingFunction().method1
    scores = [sentence_bleu(kept[:i] + kept[i + 1 :], hyp, smoothing_function=smoothing) for i, hyp in enumerate(kept)]
    return sum(scores) / len(scores)


def edit_distance(seed: list[str], rewrite: list[str]) -> float:
    """Normalised word-level edit size: 1 − difflib's similarity ratio (0 identical, 1 nothing in common)."""
    if not seed and not rewrite:
        return 0.0
    return 1.0 - difflib.SequenceMatcher(None, seed, rewrite, autojunk=False).ratio()


def p90(values: Sequence[float]) -> float:
    """The 90th percentile (nearest rank); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return float(ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)])


def _lengths(role: str, tokens: Sequence[int], caps: Sequence[int]) -> dict[str, float]:
    """Mean, p90 and share at the cap of one role's response lengths."""
    mean, high, clipped = _length_names(role)
    if not tokens:
        return {mean: 0.0, high: 0.0, clipped: 0.0}
    return {
        mean: sum(tokens) / len(tokens),
        high: p90(tokens),
        clipped: sum(t >= cap for t, cap in zip(tokens, caps, strict=True)) / len(tokens),
    }


def _attacker_texts(traces: Sequence[GameTrace], max_rewrites: int) -> tuple[dict[str, float], set[str]]:
    """Diversity and edit size of the step's rewrites, and the names measured."""
    played = [t for t in traces if t.rewrite is not None]
    rewrites = [words(t.rewrite or "") for t in played]
    out = {f"attacker/distinct_{n}": distinct_n(rewrites, n) for n in DISTINCT_ORDERS}
    out["attacker/self_bleu"] = self_bleu(rewrites, max_rewrites)
    out["attacker/edit_distance"] = (
        sum(edit_distance(words(t.seed_text), r) for t, r in zip(played, rewrites, strict=True)) / len(played)
        if played
        else 0.0
    )
    out["attacker/copy_rate"] = (
        sum(" ".join(t.seed_text.split()) == " ".join((t.rewrite or "").split()) for t in played) / len(played)
        if played
        else 0.0
    )
    measured = set()
    if played:
        measured |= {"attacker/edit_distance", "attacker/copy_rate"}
    if sum(bool(r) for r in rewrites) >= 2:
        measured |= {"attacker/self_bleu", *(f"attacker/distinct_{n}" for n in DISTINCT_ORDERS)}
    return out, measured


def collapse_monitors(
    outcomes: Sequence[GameOutcome], traces: Sequence[GameTrace], max_rewrites: int
) -> MonitorReading:
    """Every collapse monitor of one step's games (ties included: the turns were played).

    `outcomes[i]` and `traces[i]` describe the same game. A monitor is *measured* when the step
    had enough games for it: diversity needs two non-empty rewrites, edit size and the attacker's
    lengths one rewrite, the two verdict shares two readable verdicts, the assessor's lengths
    one game. Unmeasured monitors report 0.0 (never NaN) and never count towards an alarm.
    """
    if len(outcomes) != len(traces):
        raise ValueError(f"{len(outcomes)} outcomes but {len(traces)} traces: one trace per game is needed")
    values, measured = _attacker_texts(traces, max_rewrites)
    attacker = [t for t in traces if t.attacker_tokens is not None]
    values.update(_lengths("attacker", [t.attacker_tokens or 0 for t in attacker], [t.response_cap for t in attacker]))
    values.update(_lengths("assessor", [t.assessor_tokens for t in traces], [t.response_cap for t in traces]))
    if attacker:
        measured |= set(_length_names("attacker"))
    if traces:
        measured |= set(_length_names("assessor"))
    error_share = error_verdict_share(outcomes)
    if error_share is not None:
        values["assessor/majority_verdict_share"] = max(error_share, 1.0 - error_share)
        # The direction of a collapse onto one verdict: the majority share alone cannot tell ERROR from NO_ERROR.
        values["assessor/error_verdict_share"] = error_share
        measured |= {"assessor/majority_verdict_share", "assessor/error_verdict_share"}
    else:
        values["assessor/majority_verdict_share"] = values["assessor/error_verdict_share"] = 0.0
    return MonitorReading({name: float(values[name]) for name in monitor_names()}, frozenset(measured))
