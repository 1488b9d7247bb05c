"""A resumed run's metrics file holds each step once: the records of steps it will replay are moved aside first.

A run killed after its last checkpoint logged steps the resume does not keep: the trainer restarts from the
checkpoint's step and plays those steps again, on a new trajectory. Before it starts, the launcher moves their
records (and a last line cut by the kill) out of the metrics file into `<name>.replayed.jsonl` beside it, so the
metrics file lists every step exactly once and the first trajectory's records are kept, not lost. The side file is
written and fsynced before the metrics file is replaced atomically: a crash in between leaves a record in both,
never in neither.
"""

from __future__ import annotations

import os
from pathlib import Path

from medical_team.common.errors import UserInputError
from medical_team.reliability.durable import fsync_directory, write_atomically
from medical_team.run_folder.metrics_records import parse_record

REPLAYED_SUFFIX = ".replayed.jsonl"


def replayed_file(metrics_file: Path) -> Path:
    """Where the records of replayed steps go: `metrics.jsonl` -> `metrics.replayed.jsonl`."""
    return metrics_file.with_name(metrics_file.stem + REPLAYED_SUFFIX)


def set_aside_replayed_steps(metrics_file: Path, resume_step: int | None) -> int:
    """Move the records of steps after `resume_step` (all, from scratch) to the replayed file; return how many moved.

    Malformed lines are named by `parse_record` (file and line) before anything moves; an unfinished last line
    (the kill came while it was written) moves with the replayed records.
    """
    if not metrics_file.is_file():
        return 0
    try:
        text = metrics_file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UserInputError("not UTF-8 text", file=str(metrics_file), field="metrics file") from None
    lines = text.split("\n")
    unfinished = lines.pop()  # "" when the file ends with its newline
    kept, moved = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        step, _ = parse_record(line, metrics_file.name, number)
        (kept if resume_step is not None and step <= resume_step else moved).append(line)
    if unfinished.strip():
        moved.append(unfinished)
    if not moved:
        return 0
    side = replayed_file(metrics_file)
    with side.open("a", encoding="utf-8") as file:
        file.write("".join(f"{line}\n" for line in moved))
        file.flush()
        os.fsync(file.fileno())
    fsync_directory(side.parent)
    write_atomically(metrics_file, "".join(f"{line}\n" for line in kept))
    return len(moved)
