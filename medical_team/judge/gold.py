"""Gold judge requests built from MEDEC pairs whose truth is known without any model.

Each error note gives a harmful seed H (the note as written) and a benign seed B (its corrected
version). From one pair, and the corrected note of another case of similar length, come seven
requests whose `error_present` and `faithful` answers follow from MEDEC alone (docs/judge.md):

| kind | seed, task | rewrite | error_present | faithful |
|---|---|---|---|---|
| injected_error | B, inject | H's text | yes | yes |
| removed_error | H, keep the error | B's text | no | no |
| identity | H, keep the error | H's text | yes | yes |
| identity | B, decoy | B's text | no | yes |
| truncated | H, keep the error | H's first half | yes iff the error sentence is kept | no |
| truncated | B, inject | B's first half | no | no |
| off_topic | H, keep the error | another case's corrected note | no | no |
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from medical_team.common.vocab import Category, Label
from medical_team.data.records import GameSeed
from medical_team.game.judging import JudgeRequest, JudgeVerdict

GOLD_KINDS: tuple[str, ...] = ("injected_error", "removed_error", "identity", "truncated", "off_topic")
SPLITS: tuple[str, ...] = ("train", "val", "all")


@dataclass(frozen=True)
class GoldItem:
    """One judge request with its known answers and where it came from."""

    request: JudgeRequest
    kind: str  # one of GOLD_KINDS
    error_present: bool
    faithful: bool
    error_type: str  # MEDEC error type of the pair the item was built from

    def error_correct(self, verdict: JudgeVerdict) -> bool:
        """The verdict's `error_present` is the known one (a tie is wrong)."""
        return not verdict.tie and verdict.error_present is self.error_present

    def faithful_correct(self, verdict: JudgeVerdict) -> bool:
        """The verdict's `faithful` is the known one (a tie is wrong)."""
        return not verdict.tie and verdict.faithful is self.faithful

    def correct(self, verdict: JudgeVerdict) -> bool:
        """Both answers are the known ones."""
        return self.error_correct(verdict) and self.faithful_correct(verdict)


def _adversarial(seed: GameSeed) -> GameSeed:
    return dataclasses.replace(seed, category=Category.of(seed.label, adversarial=True))


def gold_pairs(seeds: Sequence[GameSeed]) -> list[tuple[GameSeed, GameSeed]]:
    """(harmful, benign) seeds, played adversarially, of every error note both of whose seeds are in `seeds`."""
    harmful = {s.pair_id: s for s in seeds if s.label is Label.ERROR and s.error_sentence_id >= 0}
    benign = {s.pair_id: s for s in seeds if s.label is Label.NO_ERROR and s.pair_id in harmful}
    return [(_adversarial(harmful[pid]), _adversarial(benign[pid])) for pid in harmful if pid in benign]


def _truncated(seed: GameSeed) -> tuple[str, int]:
    """The seed's first half of sentences (at least one, never all) and how many were kept."""
    kept = max(1, min(len(seed.sentences) - 1, len(seed.sentences) // 2))
    return " ".join(seed.sentences[:kept]), kept


def _other_case(index: int, pairs: Sequence[tuple[GameSeed, GameSeed]]) -> GameSeed:
    """The corrected note of another case closest in length, so that no length rule settles the off-topic item."""
    length = len(pairs[index][0].text)
    others = [benign for j, (_, benign) in enumerate(pairs) if j != index]
    return min(others, key=lambda seed: abs(len(seed.text) - length))


def pair_items(index: int, pairs: Sequence[tuple[GameSeed, GameSeed]]) -> list[GoldItem]:
    """The seven gold items of pair `index` (see the module docstring)."""
    harmful, benign = pairs[index]
    error_type = harmful.error_type or "unknown"

    def item(seed: GameSeed, intended: Label, rewrite: str, kind: str, error: bool, faithful: bool) -> GoldItem:
        return GoldItem(JudgeRequest(seed, intended, rewrite), kind, error, faithful, error_type)

    harmful_half, kept = _truncated(harmful)
    benign_half, _ = _truncated(benign)
    return [
        item(benign, Label.ERROR, harmful.text, "injected_error", True, True),
        item(harmful, Label.ERROR, benign.text, "removed_error", False, False),
        item(harmful, Label.ERROR, harmful.text, "identity", True, True),
        item(benign, Label.NO_ERROR, benign.text, "identity", False, True),
        item(harmful, Label.ERROR, harmful_half, "truncated", harmful.error_sentence_id < kept, False),
        item(benign, Label.ERROR, benign_half, "truncated", False, False),
        item(harmful, Label.ERROR, _other_case(index, pairs).text, "off_topic", False, False),
    ]


def build_gold(seeds: Sequence[GameSeed], max_pairs: int | None = None) -> list[GoldItem]:
    """Gold items of the first `max_pairs` error notes of `seeds` (all when None); needs two notes."""
    pairs = gold_pairs(seeds)
    if len(pairs) < 2:
        raise ValueError(f"gold items need at least 2 error notes with both seeds, found {len(pairs)}")
    if max_pairs is not None:
        pairs = pairs[: max(2, max_pairs)]
    return [item for index in range(len(pairs)) for item in pair_items(index, pairs)]


def medec_seeds(split: str = "val", inputs: Sequence[str | Path] = (), seed: int = 0) -> tuple[GameSeed, ...]:
    """The game seeds of one split as `medplay convert` draws them (default input: the bundled MEDEC file)."""
    from medical_team.data.medec import VALIDATION_CSV, bundled_csv, load_medec
    from medical_team.game.dataset import ConvertOptions, build_game_dataset

    if split not in SPLITS:
        raise ValueError(f"split {split!r} is not one of {', '.join(SPLITS)}")
    notes = [note for path in (inputs or [bundled_csv(VALIDATION_CSV)]) for note in load_medec(path).notes]
    dataset = build_game_dataset(notes, ConvertOptions(seed=seed))
    return {"train": dataset.train, "val": dataset.val, "all": dataset.train + dataset.val}[split]
