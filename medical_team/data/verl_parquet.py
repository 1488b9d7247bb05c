"""verl parquet files: the row schema, a deterministic writer, a reader and a validator that reports every problem.

A row is `{"data_source", "prompt", "ability", "reward_model": {"style", "ground_truth"}, "extra_info"}`;
`extra_info` is a struct whose known fields have fixed types (below) and whose other fields are inferred.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from medical_team.common.errors import UserInputError
from medical_team.common.vocab import BENCHMARK_DATA_SOURCE, DATA_SOURCE, ERROR_TYPES, Category, Label

Row = dict[str, Any]

MESSAGE_ROLES = frozenset({"system", "user", "assistant"})
ROW_GROUP_ROWS = 4096  # rows per parquet row group, each converted and written on its own

_MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string())])
_REWARD_MODEL = pa.struct([("style", pa.string()), ("ground_truth", pa.string())])

# Types of the extra_info fields this project writes (game rows, then benchmark-only fields).
EXTRA_INFO_TYPES: dict[str, pa.DataType] = {
    "index": pa.int64(),
    "split": pa.string(),
    "note_id": pa.string(),
    "pair_id": pa.string(),
    "category": pa.string(),
    "label": pa.string(),
    "text": pa.string(),
    "error_type": pa.string(),
    "error_sentence_id": pa.int64(),
    "error_sentence": pa.string(),
    "corrected_sentence": pa.string(),
    "source_file": pa.string(),
    "sentences": pa.list_(pa.string()),
    "benign_mode": pa.string(),
    "text_id": pa.string(),
    "error_flag": pa.int64(),
}

GAME_EXTRA_FIELDS: tuple[str, ...] = (
    "index",
    "split",
    "note_id",
    "pair_id",
    "category",
    "label",
    "text",
    "error_type",
    "error_sentence_id",
    "error_sentence",
    "corrected_sentence",
    "source_file",
    "sentences",
)
BENCHMARK_EXTRA_FIELDS: tuple[str, ...] = (
    "index",
    "split",
    "text_id",
    "label",
    "text",
    "error_flag",
    "error_type",
    "error_sentence_id",
    "error_sentence",
    "corrected_sentence",
    "source_file",
    "sentences",
)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a verl parquet file: where (row, field) and what."""

    file: str
    row: int | None
    field: str | None
    message: str

    def as_error(self) -> UserInputError:
        """The problem as the `UserInputError` the CLI prints."""
        return UserInputError(self.message, file=self.file, row=self.row, field=self.field)

    def __str__(self) -> str:
        return self.as_error().one_line()


def write_verl_parquet(rows: Sequence[Row], path: str | Path) -> None:
    """Write rows to a parquet file; the same rows always give the same bytes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    schema = pa.schema(
        [
            ("data_source", pa.string()),
            ("prompt", pa.list_(_MESSAGE)),
            ("ability", pa.string()),
            ("reward_model", _REWARD_MODEL),
            ("extra_info", _extra_info_type(rows, path.name)),
        ]
    )
    try:
        write_row_groups(rows, schema, path)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as error:
        path.unlink(missing_ok=True)  # no half-written file
        raise UserInputError(f"cannot be stored in parquet: {error}", file=path.name, field="extra_info") from None


def write_row_groups(rows: Sequence[Row], schema: pa.Schema, path: Path) -> None:
    """Write rows to a parquet file `ROW_GROUP_ROWS` at a time; the same rows always give the same bytes."""
    # The whole file as one Arrow table held a second copy of every row: ~40 % of `medplay convert`'s peak
    # memory at 100,000 notes (docs/benchmarks.md, "The data path against its size").
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, max(len(rows), 1), ROW_GROUP_ROWS):
            writer.write_table(pa.Table.from_pylist(list(rows[start : start + ROW_GROUP_ROWS]), schema=schema))


def read_verl_parquet(path: str | Path) -> list[Row]:
    """All rows of a verl parquet file as plain Python values."""
    path = Path(path)
    try:
        return pq.read_table(path).to_pylist()
    except FileNotFoundError:
        raise UserInputError("no such file", file=str(path)) from None
    except (pa.ArrowInvalid, OSError) as error:
        raise UserInputError(f"not a readable parquet file: {error}", file=path.name) from None


def read_checked_rows(path: Path, data_source: str, wanted: str) -> list[Row]:
    """Rows of a parquet file whose every row is of `data_source` and valid; else a UserInputError naming the row.

    `wanted` says which file to pass instead, e.g. "the benchmark.parquet that `medplay convert` writes".
    """
    rows = read_verl_parquet(path)
    for number, row in enumerate(rows, start=1):
        if row.get("data_source") != data_source:
            raise UserInputError(
                f"data_source is {row.get('data_source')!r}, not {data_source!r}: pass {wanted}",
                file=path.name,
                row=number,
                field="data_source",
            )
        problems = validate_row(row)
        if problems:
            field, message = problems[0]
            raise UserInputError(message, file=path.name, row=number, field=field)
    return rows


def _extra_info_type(rows: Sequence[Row], name: str) -> pa.DataType:
    """The extra_info struct: known fields with fixed types, then other keys (sorted) with inferred types."""
    keys: list[str] = []
    seen: set[str] = set()
    for row in rows:
        for key in row["extra_info"]:
            if key not in seen:
                seen.add(key)
                keys.append(key)
    known = [key for key in EXTRA_INFO_TYPES if key in seen]
    other = sorted(seen - set(EXTRA_INFO_TYPES))
    fields = [(key, EXTRA_INFO_TYPES[key]) for key in known]
    for key in other:
        values = [row["extra_info"].get(key) for row in rows]
        try:
            fields.append((key, pa.array(values).type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as error:
            raise UserInputError(
                f"values of different or unsupported types across rows ({error})", file=name, field=f"extra_info.{key}"
            ) from None
    return pa.struct(fields)


def validate_verl_parquet(path: str | Path) -> list[Problem]:
    """Every problem of a verl parquet file (schema, types, empty prompts, label/category consistency)."""
    path = Path(path)
    try:
        rows = read_verl_parquet(path)
    except UserInputError as error:
        return [Problem(path.name, None, None, error.message)]
    problems = [Problem(path.name, None, None, "the file has no rows")] if not rows else []
    seen_index: dict[Any, int] = {}
    for row_number, row in enumerate(rows, start=1):
        for field, message in validate_row(row):
            problems.append(Problem(path.name, row_number, field, message))
        index = (row.get("extra_info") or {}).get("index")
        if index in seen_index:
            problems.append(
                Problem(path.name, row_number, "extra_info.index", f"{index} repeats row {seen_index[index]}")
            )
        seen_index.setdefault(index, row_number)
    return problems


def validate_row(row: Row) -> list[tuple[str, str]]:
    """(field, message) for everything wrong with one verl row; empty when the row is valid."""
    problems: list[tuple[str, str]] = []
    for column in ("data_source", "ability"):
        if not _text(row.get(column)):
            problems.append((column, "must be a non-empty string"))
    problems += _prompt_problems(row.get("prompt"))
    reward_model = row.get("reward_model")
    ground_truth = None
    if not isinstance(reward_model, dict):
        problems.append(("reward_model", "must be a struct with 'style' and 'ground_truth'"))
    else:
        ground_truth = reward_model.get("ground_truth")
        if not _text(reward_model.get("style")):
            problems.append(("reward_model.style", "must be a non-empty string"))
        if ground_truth not in _LABELS:
            problems.append(("reward_model.ground_truth", f"must be one of {sorted(_LABELS)}, got {ground_truth!r}"))
    extra = row.get("extra_info")
    if not isinstance(extra, dict):
        return problems + [("extra_info", "must be a struct")]
    source = row.get("data_source")
    if source == DATA_SOURCE:
        problems += _game_problems(extra, ground_truth)
    elif source == BENCHMARK_DATA_SOURCE:
        problems += _benchmark_problems(extra, ground_truth)
    elif _text(source):
        problems.append(
            ("data_source", f"unknown source {source!r}; expected {DATA_SOURCE} or {BENCHMARK_DATA_SOURCE}")
        )
    return problems


_LABELS = frozenset(label.value for label in Label)
_CATEGORIES = frozenset(category.value for category in Category)


def _text(value: Any) -> bool:
    """True for a string with something besides whitespace."""
    return isinstance(value, str) and bool(value.strip())


def _prompt_problems(prompt: Any) -> list[tuple[str, str]]:
    """Problems of the `prompt` column: a non-empty list of messages with a known role and non-empty content."""
    if not isinstance(prompt, list) or not prompt:
        return [("prompt", "must be a non-empty list of chat messages")]
    problems = []
    for position, message in enumerate(prompt):
        if not isinstance(message, dict):
            problems.append((f"prompt[{position}]", "must be a message with 'role' and 'content'"))
            continue
        if message.get("role") not in MESSAGE_ROLES:
            problems.append((f"prompt[{position}].role", f"must be one of {sorted(MESSAGE_ROLES)}"))
        if not _text(message.get("content")):
            problems.append((f"prompt[{position}].content", "must be non-empty text"))
    return problems


def _missing_fields(extra: dict[str, Any], fields: Iterable[str]) -> list[tuple[str, str]]:
    """A problem for each required extra_info field that is absent."""
    return [(f"extra_info.{name}", "missing") for name in fields if name not in extra]


def _error_fields_problems(extra: dict[str, Any], has_error: bool) -> list[tuple[str, str]]:
    """Consistency of error type, sentence id and sentences with whether the text holds a (known) error."""
    problems = []
    sentences = extra.get("sentences")
    if not isinstance(sentences, list) or not sentences or not all(isinstance(s, str) for s in sentences):
        problems.append(("extra_info.sentences", "must be a non-empty list of strings"))
        sentences = None
    if not _text(extra.get("text")):
        problems.append(("extra_info.text", "must be non-empty text"))
    error_type = extra.get("error_type")
    if error_type is not None and error_type not in ERROR_TYPES:
        problems.append(("extra_info.error_type", f"must be one of {', '.join(ERROR_TYPES)} or null"))
    sentence_id = extra.get("error_sentence_id")
    if not isinstance(sentence_id, int) or isinstance(sentence_id, bool):
        return problems + [("extra_info.error_sentence_id", "must be an integer")]
    if has_error:
        if sentences is not None and not 0 <= sentence_id < len(sentences):
            problems.append(("extra_info.error_sentence_id", f"{sentence_id} is not a sentence index of the note"))
        if not _text(extra.get("error_sentence")):
            problems.append(("extra_info.error_sentence", "must be non-empty text for a note with an error"))
    elif sentence_id != -1:
        problems.append(("extra_info.error_sentence_id", f"must be -1 for a note without an error, got {sentence_id}"))
    return problems


def _game_problems(extra: dict[str, Any], ground_truth: Any) -> list[tuple[str, str]]:
    """Problems of a game row's extra_info: required fields, valid category/label and their consistency."""
    problems = _missing_fields(extra, GAME_EXTRA_FIELDS)
    if problems:
        return problems
    category, label = extra["category"], extra["label"]
    if category not in _CATEGORIES:
        problems.append(("extra_info.category", f"must be one of {sorted(_CATEGORIES)}, got {category!r}"))
    if label not in _LABELS:
        problems.append(("extra_info.label", f"must be one of {sorted(_LABELS)}, got {label!r}"))
    if category in _CATEGORIES and label in _LABELS and Category(category).seed_label.value != label:
        problems.append(("extra_info.label", f"{label!r} contradicts category {category!r}"))
    if label in _LABELS and ground_truth in _LABELS and ground_truth != label:
        problems.append(("reward_model.ground_truth", f"{ground_truth!r} differs from extra_info.label {label!r}"))
    for name in ("note_id", "pair_id", "source_file", "split"):
        if not _text(extra[name]):
            problems.append((f"extra_info.{name}", "must be non-empty text"))
    if label in _LABELS:
        problems += _error_fields_problems(extra, label == Label.ERROR.value)
    return problems


def _benchmark_problems(extra: dict[str, Any], ground_truth: Any) -> list[tuple[str, str]]:
    """Problems of a benchmark row's extra_info: required fields, flag/label/ground truth agreement."""
    problems = _missing_fields(extra, BENCHMARK_EXTRA_FIELDS)
    if problems:
        return problems
    flag = extra["error_flag"]
    if flag not in (0, 1) or isinstance(flag, bool):
        return [("extra_info.error_flag", f"must be 0 or 1, got {flag!r}")]
    label = Label.ERROR.value if flag == 1 else Label.NO_ERROR.value
    if extra["label"] != label:
        problems.append(("extra_info.label", f"{extra['label']!r} contradicts error_flag {flag}"))
    if ground_truth in _LABELS and ground_truth != label:
        problems.append(("reward_model.ground_truth", f"{ground_truth!r} contradicts error_flag {flag}"))
    if not _text(extra["text_id"]):
        problems.append(("extra_info.text_id", "must be non-empty text"))
    return problems + _error_fields_problems(extra, flag == 1)
