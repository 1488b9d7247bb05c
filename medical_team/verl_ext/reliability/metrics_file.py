"""Append-only metrics JSONL: a restarted run keeps the steps logged before it.

verl's file logger opens its JSONL with mode "wb", so a restart with the same path truncates the
history. The trainer process swaps in this subclass, which appends, after cutting off a last line
that a killed run left unfinished (so the first new record starts a line of its own). A resumed run
may log a step twice (steps after the last checkpoint are replayed); readers merge the records of a
step, later values winning (`medical_team.metrics_records`).
"""

from __future__ import annotations

import os

from verl.utils import tracking


class AppendingFileLogger(tracking.FileLogger):
    """verl's FileLogger, opening its file for appending."""

    def __init__(self, project_name: str, experiment_name: str):
        self.project_name = project_name
        self.experiment_name = experiment_name
        self.filepath = os.getenv("VERL_FILE_LOGGER_PATH") or os.path.join(
            os.path.expanduser(os.getenv("VERL_FILE_LOGGER_ROOT", ".")), project_name, f"{experiment_name}.jsonl"
        )
        os.makedirs(os.path.dirname(os.path.abspath(self.filepath)), exist_ok=True)
        cut_unfinished_line(self.filepath)
        self.fp = open(self.filepath, "ab", buffering=0)  # noqa: SIM115 - closed by finish()


def cut_unfinished_line(path: str) -> None:
    """Truncate the file at `path` after its last newline: a run killed mid-write leaves a line without one."""
    if not os.path.exists(path):
        return
    with open(path, "rb+") as file:
        data = file.read()
        if data and not data.endswith(b"\n"):
            file.truncate(data.rfind(b"\n") + 1)


def use_appending_file_logger() -> None:
    """Make verl's Tracking create AppendingFileLogger for the `file` backend (call in the trainer process)."""
    tracking.FileLogger = AppendingFileLogger
