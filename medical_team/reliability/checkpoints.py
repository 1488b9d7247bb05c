"""Checkpoint integrity: verl's tracker names only a complete, verified checkpoint whose step's metrics are on disk.

verl writes `latest_checkpointed_iteration.txt` with a plain `open("w")` at the end of its save, so a
kill at the wrong moment can leave it empty, and a kill during a save leaves a `global_step_N`
folder without the files a resume needs. What a step folder holds is judged here (`is_complete`, `has_weights`,
`has_manifest`, `damage`); two users write the tracker, each atomically (`write_atomically`):

- the launcher, before the trainer starts: `repair_tracker` points the tracker at the newest
  complete checkpoint (`is_complete`) that still matches its manifest (`manifest.py`), skipping torn,
  weightless and damaged ones;
- the trainer, around each save (`step_commits.py`): the tracker moves to a step only once its metrics line is on
  disk and `mark_complete` has written the step's marker with its manifest (`medplay_complete.json`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from medical_team.reliability.durable import fsync_tree, write_atomically
from medical_team.reliability.manifest import manifest, mismatches
from medical_team.run_folder.checkpoint_folder import TRACKER_NAME, read_tracker, step_dirs

COMPLETE_MARKER = "medplay_complete.json"  # written into global_step_N after verl's save returned
DATALOADER_STATE = "data.pt"  # verl writes it last-but-one, after the actor shards
ACTOR = "actor"  # the folder verl saves the policy's shards into (and its own retention removed, leaving husks)
# Why a step folder without weights is no checkpoint (repair_tracker's warning, `medplay export`'s refusal).
WEIGHTLESS = (
    f"holds no weights (no file under {ACTOR}/: removed by verl's own retention under an older medplay, "
    "or a save killed before its first file)"
)

log = logging.getLogger(__name__)


def mark_complete(step_dir: Path, step: int) -> None:
    """Record that the checkpoint in `step_dir` was fully written: fsync it, then write the marker with its manifest.

    Files first, then folders, then the marker (itself fsynced with its folder): a marker on disk means every file
    it lists is on disk too.
    """
    fsync_tree(step_dir)
    files = manifest(step_dir, leave_out=COMPLETE_MARKER)
    write_atomically(step_dir / COMPLETE_MARKER, json.dumps({"global_step": step, "files": files}, indent=1))


def is_complete(step_dir: Path, *, named_by_tracker: bool) -> bool:
    """A checkpoint is complete when marked, or when verl's tracker names it and its last file exists.

    verl writes the tracker only after every save call returned, so a tracked folder with its
    dataloader state is complete even if the process died before the marker was written.
    """
    if (step_dir / COMPLETE_MARKER).is_file():
        return True
    return named_by_tracker and (step_dir / DATALOADER_STATE).is_file() and (step_dir / ACTOR).is_dir()


def has_weights(step_dir: Path) -> bool:
    """Whether a step folder holds the policy's weights: a file anywhere under its `actor/`.

    A folder without (a husk) is what verl's own retention left before medplay owned retention: `data.pt` and a
    marker listing the deleted files. It can neither be resumed from nor exported.
    """
    actor = step_dir / ACTOR
    return actor.is_dir() and any(path.is_file() for path in actor.rglob("*"))


def damage(step_dir: Path) -> list[str]:
    """What in a marked checkpoint no longer matches the manifest in its marker (nothing for an unmarked one).

    A marker without a manifest (written before medplay kept one) is trusted as before.
    """
    marker = step_dir / COMPLETE_MARKER
    if not marker.is_file():
        return []
    try:
        record = json.loads(marker.read_text())
        files = record["files"] if isinstance(record, dict) and "files" in record else {}
        return mismatches(step_dir, files)
    except (OSError, ValueError, TypeError, KeyError) as error:
        return [f"{COMPLETE_MARKER}: unreadable ({error})"]


@dataclass
class TrackerRepair:
    """What `repair_tracker` found and did."""

    resume_step: int | None  # the step the trainer will resume from (None: from scratch)
    tracker_was: int | None
    torn_steps: list[int] = field(default_factory=list)  # incomplete checkpoints that were skipped
    weightless: list[int] = field(default_factory=list)  # step folders without weights (husks), skipped
    damaged: dict[int, list[str]] = field(default_factory=dict)  # marked checkpoints that no longer match, skipped
    unverified: list[int] = field(default_factory=list)  # complete ones without a manifest, not trusted: skipped
    rewritten: bool = False

    def messages(self) -> list[str]:
        """Human-readable warnings about what was skipped or changed."""
        lines = [f"checkpoint global_step_{s} is incomplete (torn by a crash?); skipping it" for s in self.torn_steps]
        lines += [f"checkpoint global_step_{s} {WEIGHTLESS}; skipping it" for s in self.weightless]
        lines += [
            f"checkpoint global_step_{s} does not match its manifest ({'; '.join(found)}); skipping it"
            for s, found in sorted(self.damaged.items())
        ]
        lines += [
            f"checkpoint global_step_{s} has no manifest of its files; skipping it "
            "(medplay.trust_unverified_checkpoints=true resumes from such a checkpoint)"
            for s in self.unverified
        ]
        if self.rewritten:
            target = f"global_step_{self.resume_step}" if self.resume_step is not None else "nothing (from scratch)"
            lines.append(f"tracker {TRACKER_NAME} said {self.tracker_was}; now points to {target}")
        return lines


def has_manifest(step_dir: Path) -> bool:
    """Whether the checkpoint's marker lists its files (medplay wrote and checked it)."""
    try:
        record = json.loads((step_dir / COMPLETE_MARKER).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and isinstance(record.get("files"), dict)


def repair_tracker(root: Path, *, trust_unverified: bool) -> TrackerRepair:
    """Point verl's tracker at the newest complete checkpoint under `root` that matches its manifest.

    Checkpoints are checked newest first, up to the first good one: weightless, torn and damaged ones are skipped
    with a warning.
    A good one without a manifest (plain verl's, an older medplay's, or one killed between verl's save and its
    commit) is the resume point only when `trust_unverified`; otherwise it is skipped too, and listed in `unverified`
    (when nothing else is left, the tracker is not touched: the caller refuses the run).
    """
    tracked = read_tracker(root)
    report = TrackerRepair(resume_step=None, tracker_was=tracked)
    for step, step_dir in sorted(step_dirs(root).items(), reverse=True):
        if not has_weights(step_dir):
            report.weightless.insert(0, step)
        elif not is_complete(step_dir, named_by_tracker=(step == tracked)):
            report.torn_steps.insert(0, step)
        elif found := damage(step_dir):
            report.damaged[step] = found
        elif not trust_unverified and not has_manifest(step_dir):
            report.unverified.insert(0, step)
        else:
            report.resume_step = step
            break
    resume = report.resume_step
    if resume is None and report.unverified:  # the caller refuses the run; a rerun that trusts them finds all as it was
        return report
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
