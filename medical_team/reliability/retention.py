"""Checkpoint retention: `trainer.max_actor_ckpt_to_keep` whole `global_step_N` folders, removed only after a commit.

verl 0.9.1's own retention deletes a step's `actor/` folder from inside the FSDP worker's save and leaves the step
folder (`data.pt`, medplay's marker listing the deleted files): a husk that can neither be resumed from nor
exported, and with `max_actor_ckpt_to_keep: 1` it deleted the previous checkpoint before the new one was committed.
Its list of saves lives in the worker's memory, so a resumed run never removes what the run before it saved.
medplay keeps verl's from running (the trainer's `_save_checkpoint`) and retains here instead:

- `retain`, called by `StepCommits.commit` once step N is committed (marker written, tracker moved to it), keeps
  the newest K finished checkpoints at or below N and removes every other step folder at or below N, whole: older
  checkpoints, torn saves, husks. Never N, never the one the tracker names, never before N is committed, so there
  is always a committed checkpoint to resume from. Folders above N (left by a run that went further and was
  killed before committing them) are left for the save of that step to replace.
- `remove_husks`, at `medplay train`'s start, removes step folders without weights (an older medplay's husks).

A folder is removed by renaming it out of the `global_step_N` namespace first (atomic), then deleting it: a crash
midway leaves a `*.removing` folder no reader takes for a checkpoint, which the next removal finishes.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from medical_team.reliability.checkpoints import has_weights, is_complete
from medical_team.reliability.durable import fsync_directory
from medical_team.run_folder.checkpoint_folder import read_tracker, step_dirs

REMOVING_SUFFIX = ".removing"

log = logging.getLogger(__name__)


def keeps_all(keep: object) -> bool:
    """Whether `max_actor_ckpt_to_keep` keeps every checkpoint: verl's rule, anything but an int above 0."""
    return not (isinstance(keep, int) and keep > 0)


def is_finished(step_dir: Path) -> bool:
    """A save that ran to its end: weights, and the dataloader state verl writes after them (or medplay's marker)."""
    return has_weights(step_dir) and is_complete(step_dir, named_by_tracker=True)


def husks(root: Path) -> list[int]:
    """The steps under `root` whose folder holds no weights (verl's retention removed its `actor/`), oldest first."""
    return sorted(step for step, folder in step_dirs(root).items() if not has_weights(folder))


def remove_step_folder(step_dir: Path) -> None:
    """Remove a step folder whole: renamed out of the `global_step_N` names (durably), then deleted."""
    doomed = step_dir.with_name(step_dir.name + REMOVING_SUFFIX)
    step_dir.rename(doomed)
    fsync_directory(step_dir.parent)
    shutil.rmtree(doomed)


def finish_removals(root: Path) -> None:
    """Delete what a removal interrupted by a crash left (`global_step_N.removing` folders)."""
    if root.is_dir():
        for leftover in root.glob(f"global_step_*{REMOVING_SUFFIX}"):
            shutil.rmtree(leftover)


def retain(root: Path, keep: object, committed: int) -> list[int]:
    """Once step `committed` is committed, remove the step folders at or below it beyond the newest `keep` finished
    checkpoints; return the removed steps (none when `keeps_all(keep)`)."""
    if keeps_all(keep):
        return []
    assert isinstance(keep, int)
    folders = {step: folder for step, folder in step_dirs(root).items() if step <= committed}
    finished = sorted((step for step, folder in folders.items() if is_finished(folder)), reverse=True)
    kept = {*finished[:keep], committed, read_tracker(root)}
    removed = sorted(step for step in folders if step not in kept)
    finish_removals(root)
    for step in removed:
        remove_step_folder(folders[step])
    if removed:
        log.info("retention (keep %d): removed %s", keep, ", ".join(f"global_step_{step}" for step in removed))
    return removed


def remove_husks(root: Path) -> list[int]:
    """Remove the step folders that hold no weights (an older medplay's husks, empty saves); return their steps."""
    finish_removals(root)
    found = husks(root)
    folders = step_dirs(root)
    for step in found:
        remove_step_folder(folders[step])
    return found
