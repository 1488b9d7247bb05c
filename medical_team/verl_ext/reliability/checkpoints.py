"""Checkpoint integrity: verl's tracker file names only a complete checkpoint whose step's metrics are written.

verl writes `latest_checkpointed_iteration.txt` with a plain `open("w")` at the end of its save, so a
kill at the wrong moment can leave it empty, and a kill during a save leaves a `global_step_N`
folder without the files a resume needs. Two users, each writing the tracker atomically
(`write_atomically`):

- the launcher, before the trainer starts: `repair_tracker` points the tracker at the newest
  complete checkpoint (`is_complete`), skipping torn ones;
- the trainer, around each save: `StepCommits.saved` points the tracker back at the previous
  checkpoint, and `StepCommits.commit`, once the step's metrics line is written, marks the new
  folder complete (`medplay_complete.json`) and moves the tracker to it.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from medical_team.checkpoint_folder import TRACKER_NAME, read_tracker, step_dirs

COMPLETE_MARKER = "medplay_complete.json"  # written into global_step_N after verl's save returned
DATALOADER_STATE = "data.pt"  # verl writes it last-but-one, after the actor shards

log = logging.getLogger(__name__)


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text` so readers see the old or the new content, never a partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False) as tmp:
        tmp.write(text)
        tmp.flush()
        os.fsync(tmp.fileno())
    os.replace(tmp.name, path)


def mark_complete(step_dir: Path, step: int) -> None:
    """Record that the checkpoint in `step_dir` was fully written."""
    write_atomically(step_dir / COMPLETE_MARKER, json.dumps({"global_step": step}))


def is_complete(step_dir: Path, *, named_by_tracker: bool) -> bool:
    """A checkpoint is complete when marked, or when verl's tracker names it and its last file exists.

    verl writes the tracker only after every save call returned, so a tracked folder with its
    dataloader state is complete even if the process died before the marker was written.
    """
    if (step_dir / COMPLETE_MARKER).is_file():
        return True
    return named_by_tracker and (step_dir / DATALOADER_STATE).is_file() and (step_dir / "actor").is_dir()


@dataclass
class TrackerRepair:
    """What `repair_tracker` found and did."""

    resume_step: int | None  # the step the trainer will resume from (None: from scratch)
    tracker_was: int | None
    torn_steps: list[int] = field(default_factory=list)  # incomplete checkpoints that were skipped
    rewritten: bool = False

    def messages(self) -> list[str]:
        """Human-readable warnings about what was skipped or changed."""
        lines = [f"checkpoint global_step_{s} is incomplete (torn by a crash?); skipping it" for s in self.torn_steps]
        if self.rewritten:
            target = f"global_step_{self.resume_step}" if self.resume_step is not None else "nothing (from scratch)"
            lines.append(f"tracker {TRACKER_NAME} said {self.tracker_was}; now points to {target}")
        return lines


def repair_tracker(root: Path) -> TrackerRepair:
    """Point verl's tracker at the newest complete checkpoint under `root`, skipping torn ones."""
    tracked = read_tracker(root)
    dirs = step_dirs(root)
    complete = [s for s, d in dirs.items() if is_complete(d, named_by_tracker=(s == tracked))]
    resume = max(complete, default=None)
    report = TrackerRepair(
        resume_step=resume,
        tracker_was=tracked,
        torn_steps=sorted(s for s in dirs if s not in complete and (resume is None or s > resume)),
    )
    if resume != tracked:
        tracker = root / TRACKER_NAME
        if resume is None:
            tracker.unlink(missing_ok=True)
        else:
            write_atomically(tracker, str(resume))
        report.rewritten = tracked is not None or resume is not None
    for line in report.messages():
        log.warning(line)
    return report


class StepCommits:
    """Makes verl's tracker name a step only once that step's checkpoint AND its metrics line are written.

    verl saves a checkpoint inside a step and logs the step's metrics afterwards, so a crash in between
    would resume after a step whose metrics were never written. `saved` holds the tracker back at
    the previous checkpoint; `commit`, called once the metrics are logged, marks the new checkpoint
    complete and moves the tracker to it. A crash in between replays the step instead of losing it.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.pending: int | None = None

    def saved(self, step: int, previous: int | None) -> None:
        """verl just saved `step` and pointed the tracker at it; point it back until the step is committed."""
        if read_tracker(self.root) != step:  # asynchronous save: verl has not written the tracker yet
            return
        if previous is not None and not (self.root / f"global_step_{previous}").is_dir():
            # max_actor_ckpt_to_keep removed the previous checkpoint: the new one is the only one to resume from.
            self.pending = step
            self.commit()
            return
        self.pending = step
        if previous is None:
            (self.root / TRACKER_NAME).unlink(missing_ok=True)
        else:
            write_atomically(self.root / TRACKER_NAME, str(previous))

    def commit(self) -> None:
        """The pending step's metrics are written: mark its checkpoint complete and make it the resume point."""
        if self.pending is None:
            return
        mark_complete(self.root / f"global_step_{self.pending}", self.pending)
        write_atomically(self.root / TRACKER_NAME, str(self.pending))
        self.pending = None
