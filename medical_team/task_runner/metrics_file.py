"""Append-only, durable metrics JSONL: a restarted run keeps the steps logged before it, and a logged step is on disk.

verl's file logger opens its JSONL with mode "wb", so a restart with the same path truncates the
history. The trainer process swaps in this subclass, which appends, after cutting off a last line
that a killed run left unfinished (so the first new record starts a line of its own). A resumed run
replays the steps after its last checkpoint; the launcher moves their first records aside before it starts
(`medical_team.reliability.replayed_steps`), so each step is in the file once. Readers still merge the records
of a step, later values winning (`medical_team.run_folder.metrics_records`): verl's SFT trainer logs a step's validation
in a record of its own.

verl's `log` writes each record with one `self.fp.write` and ignores a short write (a full disk, a file-size
limit), and the trainer commits a step once logging returns. Here `fp` writes every byte of a record or raises,
and `log` fsyncs the file before it returns; a record that cannot be written whole is cut off again and raises
`MetricsWriteError`, which ends the run before the step is committed.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path
from typing import Any

from verl.utils import tracking

from medical_team.reliability.durable import fsync_directory
from medical_team.run.failures import MetricsWriteError


class WholeWrites(io.FileIO):
    """An unbuffered file whose `write` writes every byte or raises OSError, saying how many bytes it wrote."""

    def write(self, data: Any) -> int:
        """Write all of `data`, retrying after a short write (the retry meets the error that cut it short)."""
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            try:
                written = super().write(view[done:])
            except OSError as error:
                raise OSError(error.errno, f"{error.strerror} after {done} of {len(view)} bytes") from error
            if not written:
                raise OSError(f"the file took {done} of {len(view)} bytes and then no more")
            done += written
        return done


class AppendingFileLogger(tracking.FileLogger):
    """verl's FileLogger, opening its file for appending and returning from `log` only once the record is on disk."""

    def __init__(self, project_name: str, experiment_name: str):
        self.project_name = project_name
        self.experiment_name = experiment_name
        self.filepath = os.getenv("VERL_FILE_LOGGER_PATH") or os.path.join(
            os.path.expanduser(os.getenv("VERL_FILE_LOGGER_ROOT", ".")), project_name, f"{experiment_name}.jsonl"
        )
        os.makedirs(os.path.dirname(os.path.abspath(self.filepath)), exist_ok=True)
        cut_unfinished_line(self.filepath)
        self.fp = WholeWrites(self.filepath, "ab")  # closed by finish()
        fsync_directory(Path(self.filepath).absolute().parent)  # the file's name, when this created it

    def log(self, data: dict[str, Any], step: int) -> None:
        """verl's record of the step, written whole and fsynced; MetricsWriteError when it cannot be."""
        descriptor = self.fp.fileno()
        start = os.fstat(descriptor).st_size
        try:
            super().log(data, step)
            os.fsync(descriptor)
        except OSError as error:
            with contextlib.suppress(OSError):  # leave the records before it whole, with no piece of this one
                os.ftruncate(descriptor, start)
            raise MetricsWriteError(
                f"step {step}'s metrics could not be written to {self.filepath} ({error}), so the step was not "
                "committed: the checkpoint tracker still names the checkpoint before it; make room on that disk "
                "(or raise the file-size limit, `ulimit -f`) and rerun with trainer.resume_mode=auto, which replays "
                "the step"
            ) from error


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
