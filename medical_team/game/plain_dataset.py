"""Plain notes (no labels) -> the game's dataset files: adversarial games the judge settles, and the MEDEC benchmark.

Run through the CLI: `medplay convert --notes notes.csv --output DIR [--group-column NAME] [--notes-are-clean]`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from medical_team.common.errors import UserInputError
from medical_team.data.medec import LoadResult, load_medec
from medical_team.data.plain_formats import FILE_NAME, FILE_TEXT
from medical_team.data.plain_notes import OnBadRow, PlainNote, PlainNotes, read_plain_notes
from medical_team.data.plain_seeds import note_origin, plain_case_groups, plain_seeds
from medical_team.data.report import file_summary, plain_file_summary
from medical_team.game.dataset import (
    ConvertOptions,
    GameDataset,
    build_benchmark,
    dataset_from_seeds,
    prepare_output,
    seed_report,
    write_game_files,
    write_report,
)
from medical_team.game.note_lengths import long_notes_report

PLAIN_SHAPE = "plain_notes"  # the report's `input_shape` (MEDEC CSVs: game.dataset.MEDEC_SHAPE)
SPLITTER = "sentencex"


@dataclass(frozen=True)
class PlainOptions:
    """How plain notes are read and grouped (the `medplay convert --notes` options)."""

    id_column: str | None = None  # None: the file's `note_id`, else `id` (data/plain_columns.py)
    text_column: str | None = None  # None: the file's `note`, else `text`
    group_column: str | None = None  # None: one note per case
    notes_are_clean: bool = False  # the user asserts no note holds an error: half are played as vanilla games
    on_bad_row: OnBadRow = "refuse"


@dataclass(frozen=True)
class _Located:
    """A plain note as the long-note check reads it (`game.note_lengths.LocatedNote`)."""

    text_id: str
    text: str
    source_file: str
    source_row: int | None


def convert_plain_notes(
    notes_path: str | Path,
    benchmark: str | Path,
    output_dir: str | Path,
    options: ConvertOptions,
    plain: PlainOptions = PlainOptions(),
) -> dict[str, Any]:
    """Read plain notes, write train/val (and, for clean notes, SFT) files, the MEDEC benchmark and the report."""
    if options.include_clean_notes:
        raise UserInputError(
            "is for MEDEC CSVs (notes with Error Flag 0); plain notes have no flag: pass --notes-are-clean to "
            "play them as clean notes",
            field="--include-clean-notes",
        )
    output_dir = Path(output_dir)
    prepare_output(output_dir)
    read = _read(Path(notes_path), plain, options.encoding)
    bench = load_medec(benchmark, options.encoding)
    _check_benchmark_separate(read, bench)
    groups = plain_case_groups(read.notes, plain.group_column)
    _check_two_groups(groups, plain.group_column, Path(notes_path).name)
    seeds = plain_seeds(read.notes, options.seed, plain.notes_are_clean)
    dataset = dataset_from_seeds(seeds, groups, options)
    benchmark_notes = bench.notes[: options.benchmark_notes]
    # SFT targets are gold answers; unlabelled notes have none unless the user vouches that they are clean.
    files = write_game_files(
        output_dir, dataset, build_benchmark(benchmark_notes), options.benign_mode, sft=plain.notes_are_clean
    )
    report = _report(options, plain, read, bench, dataset, files, Path(notes_path))
    report["long_notes"] = long_notes_report([*map(_located, read.notes), *benchmark_notes])
    write_report(output_dir, report)
    return report


def _read(path: Path, plain: PlainOptions, encoding: str) -> PlainNotes:
    """The notes; an error about the input as a whole names the option that gave it, --notes."""
    try:
        return read_plain_notes(
            path,
            id_field=plain.id_column,
            text_field=plain.text_column,
            on_bad_row=plain.on_bad_row,
            encoding=encoding,
        )
    except UserInputError as error:
        if error.field != "--input":
            raise
        raise UserInputError(error.message, file=error.file, row=error.row, field="--notes") from None


def _located(note: PlainNote) -> _Located:
    """The note with its file and row."""
    file, row = note_origin(note)
    return _Located(note.note_id, note.text, file, row)


def _check_two_groups(groups: dict[str, str], group_column: str | None, source: str) -> None:
    """Raise unless the notes form at least 2 case groups (one for train, one for validation)."""
    count = len(set(groups.values()))
    if count >= 2:
        return
    how = f"by {group_column!r}" if group_column else "one note per case"
    raise UserInputError(
        f"the notes form {count} case group ({how}); the train/val split needs at least 2: add notes"
        + (" or group by another column" if group_column else ""),
        file=source,
        field="--group-column" if group_column else "--notes",
    )


def _check_benchmark_separate(read: PlainNotes, bench: LoadResult) -> None:
    """Raise when a plain note is a benchmark note (same id, or the same text): the benchmark is never trained on."""
    ids = {note.text_id for note in bench.notes}
    texts = {_words(note.text): note for note in bench.notes}
    id_field, text_field = (read.columns.id, read.columns.text) if read.columns else (FILE_NAME, FILE_TEXT)
    for note in read.notes:
        file, row = note_origin(note)
        if note.note_id in ids:
            raise UserInputError(
                f"id {note.note_id!r} is also a note of the benchmark ({bench.source_file}); the benchmark must stay "
                "held out",
                file=file,
                row=row,
                field=id_field,
            )
        same = texts.get(_words(note.text))
        if same is not None:
            raise UserInputError(
                f"the text is benchmark note {same.text_id!r} ({bench.source_file} row {same.source_row}); the "
                "benchmark must stay held out",
                file=file,
                row=row,
                field=text_field,
            )


def _words(text: str) -> str:
    """The text with its blanks collapsed (two texts that differ only in whitespace are the same note)."""
    return " ".join(text.split())


def _report(
    options: ConvertOptions,
    plain: PlainOptions,
    read: PlainNotes,
    bench: LoadResult,
    dataset: GameDataset,
    files: dict[str, int],
    notes_path: Path,
) -> dict[str, Any]:
    """The dataset report as a JSON-able dict (no paths or times: equal inputs give equal reports)."""
    sentences = [len(seed.sentences) for seed in dataset.train + dataset.val]
    return {
        "input_shape": PLAIN_SHAPE,
        "options": {
            "seed": options.seed,
            "val_ratio": options.val_ratio,
            "benign_mode": options.benign_mode.value,
            "encoding": options.encoding,
            "id_column": plain.id_column,
            "text_column": plain.text_column,
            "group_column": plain.group_column,
            "notes_are_clean": plain.notes_are_clean,
            "on_bad_row": plain.on_bad_row,
        },
        # The columns the ids and texts were read from (null for a folder of .txt files), and those found by name.
        "columns": None if read.columns is None else {**asdict(read.columns), "found": list(read.columns.found)},
        "inputs": [plain_file_summary(read, notes_path.name or str(notes_path), plain.notes_are_clean)],
        "benchmark": file_summary(bench),
        **seed_report(dataset),
        "sentences": {
            "splitter": f"{SPLITTER} {version(SPLITTER)}",
            "total": sum(sentences),
            "per_note_min": min(sentences),
            "per_note_max": max(sentences),
        },
        "files": files,
    }
