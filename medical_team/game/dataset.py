"""MEDEC -> the game's dataset files: verl parquet rows (first-turn prompts), the benchmark, OpenRLHF JSONL, the report.

Run through the CLI: `medplay convert --output DIR`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medical_team.common.errors import UserInputError
from medical_team.common.vocab import ABILITY, BENCHMARK_DATA_SOURCE, DATA_SOURCE, BenignAttackMode, Label
from medical_team.data.medec import LoadResult, load_medec
from medical_team.data.openrlhf import read_openrlhf_jsonl, to_openrlhf, write_openrlhf_jsonl
from medical_team.data.records import GameSeed, MedecNote
from medical_team.data.report import case_error_types, file_summary, seed_table, split_summary
from medical_team.data.seeds import build_seeds
from medical_team.data.sft_parquet import SFT_TRAIN_PARQUET, SFT_VAL_PARQUET, write_sft_parquet
from medical_team.data.splits import TRAIN, VAL, case_groups, split_seeds
from medical_team.data.verl_parquet import Row, write_verl_parquet
from medical_team.game.note_lengths import long_notes_report
from medical_team.game.prompts import assessor_messages, first_turn_messages
from medical_team.game.sft import sft_rows

BENCHMARK = "benchmark"
TRAIN_PARQUET = "train.parquet"
VAL_PARQUET = "val.parquet"
BENCHMARK_PARQUET = "benchmark.parquet"
TRAIN_JSONL = "train.jsonl"
REPORT_JSON = "dataset_report.json"
MEDEC_SHAPE = "medec"  # the report's `input_shape` for MEDEC CSVs (plain notes: game/plain_dataset.py)
DEFAULT_VAL_RATIO = 0.1


@dataclass(frozen=True)
class GameDataset:
    """The game's seeds split into train and validation rows, ready to write."""

    train: tuple[GameSeed, ...]
    val: tuple[GameSeed, ...]
    train_rows: tuple[Row, ...]
    val_rows: tuple[Row, ...]
    groups: dict[str, str]  # note id -> case group id


@dataclass(frozen=True)
class ConvertOptions:
    """Settings of one conversion (the `medplay convert` options)."""

    seed: int = 0
    val_ratio: float = DEFAULT_VAL_RATIO
    include_clean_notes: bool = False
    benign_mode: BenignAttackMode = BenignAttackMode.INJECT
    encoding: str = "utf-8"
    benchmark_notes: int | None = None  # only the benchmark's first N notes (None: all)


def game_row(
    seed: GameSeed,
    *,
    index: int,
    split: str,
    benign_mode: BenignAttackMode = BenignAttackMode.INJECT,
    extra: dict[str, Any] | None = None,
) -> Row:
    """The verl row of one game: the first-turn prompt, the seed label as ground truth, all metadata."""
    extra_info = {**seed.metadata(), "index": index, "split": split, "benign_mode": benign_mode.value, **(extra or {})}
    return {
        "data_source": DATA_SOURCE,
        "prompt": first_turn_messages(seed, benign_mode),
        "ability": ABILITY,
        "reward_model": {"style": "rule", "ground_truth": seed.label.value},
        "extra_info": extra_info,
    }


def benchmark_row(note: MedecNote, index: int) -> Row:
    """The verl row of one MEDEC benchmark note: the assessor prompt and the note's ground truth."""
    label = Label.ERROR if note.error_flag else Label.NO_ERROR
    return {
        "data_source": BENCHMARK_DATA_SOURCE,
        "prompt": assessor_messages(note.text),
        "ability": ABILITY,
        "reward_model": {"style": "rule", "ground_truth": label.value},
        "extra_info": {
            "index": index,
            "split": BENCHMARK,
            "text_id": note.text_id,
            "label": label.value,
            "text": note.text,
            "error_flag": int(note.error_flag),
            "error_type": note.error_type,
            "error_sentence_id": note.error_sentence_id,
            "error_sentence": note.error_sentence,
            "corrected_sentence": note.corrected_sentence,
            "source_file": note.source_file,
            "sentences": list(note.sentences),
        },
    }


def build_game_dataset(notes: Sequence[MedecNote], options: ConvertOptions = ConvertOptions()) -> GameDataset:
    """Seeds of these notes, categories drawn and split with `options.seed`, as verl rows."""
    seeds = build_seeds(notes, options.seed, options.include_clean_notes)
    if not seeds:
        raise UserInputError(
            "the input has no notes with Error Flag 1 (and clean notes are not included)", field="--input"
        )
    return dataset_from_seeds(seeds, case_groups(notes), options)


def dataset_from_seeds(
    seeds: Sequence[GameSeed], groups: dict[str, str], options: ConvertOptions = ConvertOptions()
) -> GameDataset:
    """These seeds split by case group (note id -> group id) with `options.seed`, as verl rows."""
    split = split_seeds(seeds, groups, options.val_ratio, options.seed)
    split_of = {id(seed): VAL for seed in split.val}
    rows = [
        game_row(seed, index=index, split=split_of.get(id(seed), TRAIN), benign_mode=options.benign_mode)
        for index, seed in enumerate(seeds)
    ]
    return GameDataset(
        train=split.train,
        val=split.val,
        train_rows=tuple(row for row in rows if row["extra_info"]["split"] == TRAIN),
        val_rows=tuple(row for row in rows if row["extra_info"]["split"] == VAL),
        groups=groups,
    )


def build_benchmark(notes: Sequence[MedecNote]) -> list[Row]:
    """One benchmark row per note, in file order."""
    return [benchmark_row(note, index) for index, note in enumerate(notes)]


def convert_openrlhf_to_verl(
    jsonl_path: str | Path, parquet_path: str | Path, benign_mode: BenignAttackMode = BenignAttackMode.INJECT
) -> int:
    """Convert an OpenRLHF game JSONL file to verl parquet, keeping every key of every line in `extra_info`.

    `index`, `split` and `benign_mode` come from the line when present (else: line position, `train`,
    the `benign_mode` argument). Returns the number of rows written.
    """
    records = read_openrlhf_jsonl(jsonl_path)
    rows = []
    for position, record in enumerate(records):
        mode = record.extra.get("benign_mode", benign_mode.value)
        try:
            mode = BenignAttackMode(mode)
        except ValueError:
            modes = ", ".join(m.value for m in BenignAttackMode)
            raise UserInputError(
                f"must be one of {modes}, got {mode!r}",
                file=Path(jsonl_path).name,
                row=position + 1,
                field="benign_mode",
            ) from None
        index = record.extra.get("index", position)
        split = record.extra.get("split", TRAIN)
        rows.append(game_row(record.seed, index=index, split=split, benign_mode=mode, extra=record.extra))
    write_verl_parquet(rows, parquet_path)
    return len(rows)


def convert_medec(
    inputs: Sequence[str | Path],
    benchmark: str | Path,
    output_dir: str | Path,
    options: ConvertOptions = ConvertOptions(),
) -> dict[str, Any]:
    """Load MEDEC CSVs, write train/val/benchmark/SFT parquet, train JSONL and the report; return the report."""
    output_dir = Path(output_dir)
    prepare_output(output_dir)
    loaded = [load_medec(path, options.encoding) for path in inputs]
    _check_unique_ids(loaded)
    bench = load_medec(benchmark, options.encoding)
    _check_benchmark_separate(inputs, benchmark, loaded, bench)
    notes = [note for result in loaded for note in result.notes]
    dataset = build_game_dataset(notes, options)
    benchmark_rows = build_benchmark(bench.notes[: options.benchmark_notes])
    files = write_game_files(output_dir, dataset, benchmark_rows, options.benign_mode)
    report = _report(options, loaded, bench, dataset, files)
    report["long_notes"] = long_notes_report([*notes, *bench.notes[: options.benchmark_notes]])
    write_report(output_dir, report)
    return report


def write_game_files(
    output_dir: Path,
    dataset: GameDataset,
    benchmark_rows: Sequence[Row],
    benign_mode: BenignAttackMode,
    *,
    sft: bool = True,
) -> dict[str, int]:
    """Write the train/val/benchmark parquet, the train JSONL and (when `sft`) the SFT files; rows per file.

    Without `sft`, SFT files of an earlier conversion into `output_dir` are removed: `medplay sft` must not train
    on data other than this conversion's.
    """
    write_verl_parquet(dataset.train_rows, output_dir / TRAIN_PARQUET)
    write_verl_parquet(dataset.val_rows, output_dir / VAL_PARQUET)
    write_verl_parquet(benchmark_rows, output_dir / BENCHMARK_PARQUET)
    jsonl = (to_openrlhf(seed, _jsonl_extra(row)) for seed, row in zip(dataset.train, dataset.train_rows))
    write_openrlhf_jsonl(jsonl, output_dir / TRAIN_JSONL)
    files = {
        TRAIN_PARQUET: len(dataset.train_rows),
        VAL_PARQUET: len(dataset.val_rows),
        BENCHMARK_PARQUET: len(benchmark_rows),  # --benchmark-notes may keep fewer than the file has
        TRAIN_JSONL: len(dataset.train_rows),
    }
    if sft:
        # The format warm start (`medplay sft`) learns from the train split only; val gives a held-out loss.
        for name, seeds, split in ((SFT_TRAIN_PARQUET, dataset.train, TRAIN), (SFT_VAL_PARQUET, dataset.val, VAL)):
            rows = sft_rows(seeds, split, benign_mode)
            write_sft_parquet(rows, output_dir / name)
            files[name] = len(rows)
    else:
        for name in (SFT_TRAIN_PARQUET, SFT_VAL_PARQUET):
            (output_dir / name).unlink(missing_ok=True)
    return files


def write_report(output_dir: Path, report: dict[str, Any]) -> None:
    """`dataset_report.json` in `output_dir`."""
    (output_dir / REPORT_JSON).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def prepare_output(output_dir: Path) -> None:
    """Create the output directory, or raise a `UserInputError` saying why it cannot be used."""
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise UserInputError("exists and is not a directory", file=str(output_dir), field="--output") from None
    except OSError as error:
        raise UserInputError(
            f"cannot create the directory: {error.strerror}", file=str(output_dir), field="--output"
        ) from None
    probe = output_dir / ".medplay-write-test"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise UserInputError(f"cannot write here: {error.strerror}", file=str(output_dir), field="--output") from None


def _jsonl_extra(row: Row) -> dict[str, Any]:
    """The row metadata a JSONL line carries besides the seed's own fields."""
    return {key: row["extra_info"][key] for key in ("index", "split", "benign_mode")}


def _check_unique_ids(loaded: Sequence[LoadResult]) -> None:
    """Raise when two input files share a note id (their seeds and splits would collide)."""
    seen: dict[str, str] = {}
    for result in loaded:
        for note in result.notes:
            if note.text_id in seen and seen[note.text_id] != result.source_file:
                raise UserInputError(
                    f"Text ID {note.text_id!r} also appears in {seen[note.text_id]}",
                    file=result.source_file,
                    row=note.source_row,
                    field="Text ID",
                )
            seen[note.text_id] = result.source_file


def _check_benchmark_separate(
    inputs: Sequence[str | Path], benchmark: str | Path, loaded: Sequence[LoadResult], bench: LoadResult
) -> None:
    """Raise when the benchmark file is also a game input or shares notes with one: it is never trained on."""
    if any(Path(path).resolve() == Path(benchmark).resolve() for path in inputs):
        raise UserInputError("the benchmark file is also given as --input; it must stay held out", field="--benchmark")
    game_ids = {note.text_id for result in loaded for note in result.notes}
    for note in bench.notes:
        if note.text_id in game_ids:
            raise UserInputError(
                f"Text ID {note.text_id!r} is also a game note; the benchmark must stay held out",
                file=bench.source_file,
                row=note.source_row,
                field="Text ID",
            )


def _report(
    options: ConvertOptions,
    loaded: Sequence[LoadResult],
    bench: LoadResult,
    dataset: GameDataset,
    files: dict[str, int],
) -> dict[str, Any]:
    """The dataset report as a JSON-able dict (no paths or times, so equal inputs give equal reports)."""
    return {
        "input_shape": MEDEC_SHAPE,
        "options": {
            "seed": options.seed,
            "val_ratio": options.val_ratio,
            "include_clean_notes": options.include_clean_notes,
            "benign_mode": options.benign_mode.value,
            "encoding": options.encoding,
        },
        "inputs": [file_summary(result) for result in loaded],
        "benchmark": file_summary(bench),
        **seed_report(dataset),
        "files": files,
    }


def seed_report(dataset: GameDataset) -> dict[str, Any]:
    """The report's `seeds` (per category x error type) and `splits` (per split) entries."""
    seeds = dataset.train + dataset.val
    types = case_error_types(seeds)
    return {
        "seeds": {"total": len(seeds), "by_category": seed_table(seeds, types)},
        "splits": {
            TRAIN: split_summary(dataset.train, dataset.groups, types),
            VAL: split_summary(dataset.val, dataset.groups, types),
        },
    }
