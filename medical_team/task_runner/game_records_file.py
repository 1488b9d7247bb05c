"""A step's game records on disk before the step is committed: `games/step_<N>.jsonl`, replaced whole, fsynced.

The trainer writes a step's records (`medical_team.game.game_records`) while it computes the step's
metrics, before the metrics record that commits the step (trainer.py, `log_then_commit`). The file is
replaced atomically (`durable.write_atomically`), so a reader sees a step's old records or its new ones,
and a step played again after a resume replaces its own records instead of adding to them. A file that
cannot be written ends the run with the step uncommitted, as a metrics record that cannot be written does.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from medical_team.game.game_records import GameRecord, records_text, step_file
from medical_team.reliability.durable import write_atomically
from medical_team.run.failures import MetricsWriteError


def write_step_records(folder: Path, step: int, records: Sequence[GameRecord]) -> Path:
    """Replace step `step`'s records in `folder` with `records`; MetricsWriteError when the file cannot be written."""
    wrong = sorted({record.step for record in records} - {step})
    if wrong:
        raise ValueError(f"records of step {wrong[0]} given for step {step}")
    path = step_file(folder, step)
    try:
        write_atomically(path, records_text(records))
        path.chmod(0o644)  # readable like the metrics file (the temporary file it was is its writer's alone)
    except OSError as error:
        raise MetricsWriteError(
            f"step {step}'s game records could not be written to {path} ({error}), so the step was not committed: "
            "the checkpoint tracker still names the checkpoint before it; make room on that disk and rerun with "
            "trainer.resume_mode=auto, which replays the step (or set medplay.report.games_per_step=0)"
        ) from error
    return path
