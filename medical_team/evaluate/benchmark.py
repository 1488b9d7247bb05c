"""The benchmark to evaluate on: assessor prompts and ground truth, from `benchmark.parquet` or a MEDEC CSV."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medical_team.common.errors import UserInputError
from medical_team.common.vocab import BENCHMARK_DATA_SOURCE
from medical_team.evaluate.gold import GoldNote
from medical_team.game.prompts import Message


@dataclass(frozen=True)
class Benchmark:
    """The notes to assess: one chat prompt and one ground truth per note, in file order."""

    source: str
    prompts: list[list[Message]]
    golds: list[GoldNote]
    skipped: dict[str, int]  # reason -> rows the loader dropped (e.g. empty CSV rows)

    def head(self, limit: int | None) -> Benchmark:
        """The first `limit` notes (all when None)."""
        if limit is None:
            return self
        return Benchmark(self.source, self.prompts[:limit], self.golds[:limit], self.skipped)

    def only(self, text_ids: Collection[str]) -> Benchmark:
        """The notes whose id is in `text_ids`, in file order; ValueError naming an id the benchmark lacks."""
        known = {gold.text_id for gold in self.golds}
        unknown = sorted(set(text_ids) - known)
        if unknown:
            raise ValueError(f"note {unknown[0]} is not in the benchmark {self.source}")
        kept = [i for i, gold in enumerate(self.golds) if gold.text_id in text_ids]
        return Benchmark(self.source, [self.prompts[i] for i in kept], [self.golds[i] for i in kept], self.skipped)


def load_benchmark(path: str | Path | None) -> Benchmark:
    """Read a benchmark parquet written by `medplay convert`, or build it from a MEDEC CSV (default: MEDEC-MS test)."""
    from medical_team.data.medec import TEST_CSV, bundled_csv

    path = Path(path) if path is not None else bundled_csv(TEST_CSV)
    if path.suffix.lower() == ".csv":
        return _from_csv(path)
    return _from_parquet(path)


def _from_csv(path: Path) -> Benchmark:
    """Benchmark rows built in memory from a MEDEC CSV with the converter's own row builder."""
    from medical_team.data.medec import load_medec
    from medical_team.game.dataset import build_benchmark

    loaded = load_medec(path)
    return _from_rows(build_benchmark(loaded.notes), str(path), dict(loaded.skipped))


def _from_parquet(path: Path) -> Benchmark:
    """Benchmark rows read from parquet, every row validated first."""
    from medical_team.data.verl_parquet import read_checked_rows

    wanted = "the benchmark.parquet that `medplay convert` writes (or a MEDEC CSV), not a game file"
    rows = read_checked_rows(path, BENCHMARK_DATA_SOURCE, wanted)
    if not rows:
        raise UserInputError("the benchmark file has no rows", file=path.name, field="--benchmark")
    return _from_rows(rows, str(path), {})


def _from_rows(rows: list[dict[str, Any]], source: str, skipped: dict[str, int]) -> Benchmark:
    """Split verl benchmark rows into prompts and ground truth."""
    name = Path(source).name
    golds = [GoldNote.from_extra_info(row["extra_info"], file=name, row=n) for n, row in enumerate(rows, start=1)]
    prompts = [[{"role": m["role"], "content": m["content"]} for m in row["prompt"]] for row in rows]
    return Benchmark(source, prompts, golds, skipped)
