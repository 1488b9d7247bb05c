"""The metrics JSONL verl's file logger writes (`{"step": N, "data": {...}}` a line), read the same way by every reader.

The per-step summaries of `medplay train` and `medplay sft`, the out-of-memory report and
`medplay report` (`evaluate/metrics_log.py`) read it with `read_step_records`; the console's step
progress tails it and parses each whole line with `parse_record`. The rules:

- the records of one step merge, later keys winning: a resumed run replays the steps after its last
  checkpoint, and verl's SFT trainer logs a step's validation loss in a record of its own;
- a last line without its newline that is not a whole record is skipped: the run may be writing it;
- any other line that is not a record is an error naming the file and the line (`UserInputError`).

No verl import: the trainer, the launcher, evaluate and cli all read the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medical_team.common.errors import UserInputError


@dataclass(frozen=True)
class StepRecords:
    """The records of one metrics file, merged per step."""

    steps: dict[int, dict[str, Any]]  # step -> its metrics, ascending; a step's records merged, later keys win
    repeated: int  # records of a step logged before (a resumed run, or verl's SFT validation record)
    last_step: int | None  # the step of the file's last record: the run's latest, even after a resume
    torn: bool  # the last line was skipped as still being written


def parse_record(line: str, file: str, number: int) -> tuple[int, dict[str, Any]]:
    """The step and the metrics of one JSONL line; `UserInputError` naming `file`, line `number` and what is wrong."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise UserInputError(f"not valid JSON ({error.msg})", file=file, row=number, field="line") from None
    if not isinstance(record, dict) or not isinstance(record.get("data"), dict):
        raise UserInputError("expected an object with a 'data' object of metrics", file=file, row=number, field="data")
    step = record.get("step")
    if not isinstance(step, int) or isinstance(step, bool):
        raise UserInputError(f"expected an integer step, found {step!r}", file=file, row=number, field="step")
    return step, record["data"]


def read_step_records(path: Path) -> StepRecords:
    """Every record of the metrics file at `path`, merged per step (OSError, e.g. FileNotFoundError, when unreadable).

    Errors name the file by its name, as `medplay report` prints them.
    """
    lines = path.read_bytes().split(b"\n")  # the piece after the last newline is b"" unless a line is unfinished
    steps: dict[int, dict[str, Any]] = {}
    repeated, last_step, torn = 0, None, False
    for number, raw in enumerate(lines, start=1):
        if number == len(lines) and not _is_json(raw):
            torn = bool(raw.strip())  # a prefix of a record is never valid JSON; the record itself always is
            break
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise UserInputError("not UTF-8 text", file=path.name, row=number, field="line") from None
        if not line.strip():
            continue
        step, data = parse_record(line, path.name, number)
        if step in steps:
            repeated += 1
        steps.setdefault(step, {}).update(data)
        last_step = step
    return StepRecords(dict(sorted(steps.items())), repeated, last_step, torn)


def _is_json(raw: bytes) -> bool:
    """Whether `raw` is one whole JSON value."""
    try:
        json.loads(raw)
    except ValueError:  # JSONDecodeError, UnicodeDecodeError
        return False
    return True
