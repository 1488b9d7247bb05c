"""The trainer's half of checkpoint integrity: a step becomes the resume point only once its metrics are on disk.

verl saves a checkpoint inside a step and logs the step's metrics afterwards, so a crash in between would resume
after a step whose metrics were never written. Around each save, `StepCommits.saving` removes the marker a
checkpoint of the same step left before (a resumed run saves that step again) and `StepCommits.saved` points the
tracker back at the previous checkpoint; `StepCommits.commit`, once the step's metrics line is on disk, fsyncs the
new folder, marks it complete with its manifest (`checkpoints.mark_complete`), moves the tracker to it, and only
then removes what retention (`retention.py`, `trainer.max_actor_ckpt_to_keep`) no longer keeps.
"""

from __future__ import annotations

from pathlib import Path

from medical_team.reliability.checkpoints import COMPLETE_MARKER, mark_complete
from medical_team.reliability.durable import fsync_directory, write_atomically
from medical_team.reliability.retention import retain
from medical_team.run_folder.checkpoint_folder import TRACKER_NAME, read_tracker


class StepCommits:
    """Makes verl's tracker name a step only once that step's checkpoint AND its metrics line are written.

    `saved` holds the tracker back at the previous checkpoint; `commit`, called once the metrics are logged, marks
    the new checkpoint complete, moves the tracker to it and applies retention. A crash in between replays the step
    instead of losing it, from a previous checkpoint that retention has not touched yet.
    """

    def __init__(self, root: Path, keep: object = None) -> None:
        self.root = root
        self.keep = keep  # trainer.max_actor_ckpt_to_keep, as verl reads it (retention.keeps_all)
        self.pending: int | None = None

    def saving(self, step: int) -> None:
        """verl is about to save `step`: a marker left in its folder by an earlier save of that step no longer holds."""
        step_dir = self.root / f"global_step_{step}"
        if (step_dir / COMPLETE_MARKER).is_file():  # a resume from an earlier checkpoint replays this step
            (step_dir / COMPLETE_MARKER).unlink()
            fsync_directory(step_dir)

    def saved(self, step: int, previous: int | None) -> None:
        """verl just saved `step` and pointed the tracker at it; point it back until the step is committed."""
        if read_tracker(self.root) != step:  # asynchronous save: verl has not written the tracker yet
            return
        self.pending = step
        if previous is None:
            (self.root / TRACKER_NAME).unlink(missing_ok=True)
        else:
            write_atomically(self.root / TRACKER_NAME, str(previous))

    def commit(self) -> list[int]:
        """The pending step's metrics are on disk: mark its checkpoint complete, make it the resume point, then
        remove the step folders retention no longer keeps; return their steps."""
        if self.pending is None:
            return []
        step, self.pending = self.pending, None
        mark_complete(self.root / f"global_step_{step}", step)
        write_atomically(self.root / TRACKER_NAME, str(step))
        return retain(self.root, self.keep, step)
