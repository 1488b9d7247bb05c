"""OpenRLHF JSONL (the Self-RedTeam prompt-data layout): writer and reader of game seeds plus their metadata.

One JSON object per line:
- `vanilla`: the seed note (GameSeed.text);
- `adversarial`: a pre-written adversarial note, "" when the attacker writes it during the game;
- `completion`: the reference assessor answer for the seed note, in the game's answer format;
- `data_type`: the game category (GameSeed.category);
- every other GameSeed field (`note_id`, `pair_id`, `label`, ...) and any further metadata, flat.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medical_team.common.errors import UserInputError
from medical_team.common.vocab import Category, Label
from medical_team.data.records import GameSeed

VANILLA = "vanilla"
ADVERSARIAL = "adversarial"
COMPLETION = "completion"
DATA_TYPE = "data_type"
OPENRLHF_FIELDS: tuple[str, ...] = (VANILLA, ADVERSARIAL, COMPLETION, DATA_TYPE)

# GameSeed fields that the JSONL stores under another name.
_RENAMED = {"text": VANILLA, "category": DATA_TYPE}
_INT64 = (-(2**63), 2**63 - 1)

# Builds the error for a field of the line being read: fail(field, message).
Fail = Callable[[str | None, str], UserInputError]


@dataclass(frozen=True)
class OpenRLHFRecord:
    """One JSONL line read back: the game seed and every other key of the line (including `adversarial`, `completion`)."""

    seed: GameSeed
    extra: dict[str, Any] = field(default_factory=dict)


def reference_answer(seed: GameSeed) -> str:
    """The assessor answer that is right for the seed note itself."""
    if seed.label is Label.NO_ERROR:
        return "verdict: NO_ERROR"
    lines = ["verdict: ERROR", f"sentence: {seed.error_sentence or ''}"]
    if seed.error_type:
        lines.append(f"error_type: {seed.error_type}")
    lines.append(f"correction: {seed.corrected_sentence or ''}")
    return "\n".join(lines)


def to_openrlhf(seed: GameSeed, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSONL object for a seed; `extra` keys (index, split, ...) are added flat and may override defaults."""
    meta = seed.metadata()
    record: dict[str, Any] = {_RENAMED.get(key, key): value for key, value in meta.items()}
    record[ADVERSARIAL] = ""
    record[COMPLETION] = reference_answer(seed)
    record.update(extra or {})
    return record


def write_openrlhf_jsonl(records: Iterable[dict[str, Any]], path: str | Path) -> int:
    """Write JSONL objects (keys sorted, UTF-8) and return how many lines were written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True, allow_nan=False) + "\n")
            count += 1
    return count


def read_openrlhf_jsonl(path: str | Path) -> list[OpenRLHFRecord]:
    """Read a game JSONL file; raise `UserInputError` naming the file, line (as row) and field on bad input."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserInputError("no such file", file=str(path)) from None
    except UnicodeDecodeError as error:
        line = path.read_bytes()[: error.start].count(b"\n") + 1
        raise UserInputError(f"byte 0x{error.object[error.start]:02x} is not UTF-8", file=path.name, row=line) from None
    records = []
    for line_number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            records.append(_parse_line(line, path.name, line_number))
    if not records:
        raise UserInputError("the file holds no records", file=path.name, row=1)
    return records


def _parse_line(line: str, name: str, row: int) -> OpenRLHFRecord:
    """One JSONL line as a record, checked field by field."""

    def fail(field_name: str | None, message: str) -> UserInputError:
        return UserInputError(message, file=name, row=row, field=field_name)

    try:
        obj = json.loads(line, parse_constant=_reject_constant)
    except (json.JSONDecodeError, ValueError) as error:
        raise fail(None, f"not valid JSON: {error}") from None
    if not isinstance(obj, dict):
        raise fail(None, f"expected a JSON object, got {type(obj).__name__}")
    meta = {key: value for key, value in obj.items() if key not in _RENAMED.values()}
    for seed_key, jsonl_key in _RENAMED.items():
        if jsonl_key not in obj:
            raise fail(jsonl_key, "missing")
        meta[seed_key] = obj[jsonl_key]
    _check_seed_fields(meta, fail)
    seed = GameSeed.from_metadata(meta)
    seed_keys = set(GameSeed.__dataclass_fields__) - set(_RENAMED)
    extra = {key: value for key, value in obj.items() if key not in seed_keys and key not in _RENAMED.values()}
    for key, value in extra.items():
        _check_value(value, fail, key)
    return OpenRLHFRecord(seed=seed, extra=extra)


def _check_seed_fields(meta: dict[str, Any], fail: Fail) -> None:
    """Raise unless the GameSeed fields are present, typed and consistent."""
    for name in ("note_id", "pair_id", "text", "source_file"):
        if not isinstance(meta.get(name), str) or not meta[name].strip():
            raise fail(_RENAMED.get(name, name), "must be non-empty text")
    for name in ("error_type", "error_sentence", "corrected_sentence"):
        if meta.get(name) is not None and not isinstance(meta[name], str):
            raise fail(name, "must be text or null")
        meta.setdefault(name, None)
    categories = [category.value for category in Category]
    if meta["category"] not in categories:
        raise fail(DATA_TYPE, f"must be one of {', '.join(categories)}, got {meta['category']!r}")
    labels = [label.value for label in Label]
    if meta.get("label") not in labels:
        raise fail("label", f"must be one of {', '.join(labels)}, got {meta.get('label')!r}")
    if Category(meta["category"]).seed_label.value != meta["label"]:
        raise fail("label", f"{meta['label']!r} contradicts data_type {meta['category']!r}")
    sentence_id = meta.get("error_sentence_id", -1)
    if not isinstance(sentence_id, int) or isinstance(sentence_id, bool):
        raise fail("error_sentence_id", "must be an integer")
    meta["error_sentence_id"] = sentence_id
    sentences = meta.get("sentences", [])
    if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
        raise fail("sentences", "must be a list of strings")


def _check_value(value: Any, fail: Fail, key: str) -> None:
    """Raise for metadata values parquet cannot hold faithfully (integers beyond 64 bits)."""
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64[0] <= value <= _INT64[1]:
        raise fail(key, "integer does not fit in 64 bits")
    if isinstance(value, float) and not math.isfinite(value):
        raise fail(key, "must be a finite number")
    if isinstance(value, list):
        for item in value:
            _check_value(item, fail, key)
    if isinstance(value, dict):
        for item in value.values():
            _check_value(item, fail, key)


def _reject_constant(name: str) -> Any:
    """JSON has no NaN or Infinity; refuse them instead of reading non-standard floats."""
    raise ValueError(f"{name} is not valid JSON")
