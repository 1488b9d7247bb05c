"""A checkpoint a reader outside training may trust: with weights, complete, with a manifest of its files, matching it.

`medplay export` reads a checkpoint through `verified_checkpoint`; the checks are the resume's own
(`checkpoints.py`: `has_weights`, `is_complete`, `has_manifest`, `damage`), applied without touching the folder (no
tracker rewrite), and a checkpoint without a manifest is never trusted here (its files were not recorded when
written). A step folder that fails is refused naming the checkpoints of its root that pass (`trustworthy`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medical_team.common.errors import UserInputError
from medical_team.reliability.checkpoints import (
    COMPLETE_MARKER,
    WEIGHTLESS,
    damage,
    has_manifest,
    has_weights,
    is_complete,
)
from medical_team.run_folder.checkpoint_folder import read_tracker, step_dirs


@dataclass(frozen=True)
class VerifiedCheckpoint:
    """A `global_step_N` folder whose files all matched the manifest its completion marker holds."""

    step: int
    folder: Path
    files: dict[str, dict[str, Any]]  # the manifest: relative path -> size and digest, each checked just now
    skipped: tuple[str, ...] = ()  # newer checkpoints of the same root passed over, each with why

    def record(self) -> dict[str, Any]:
        """What `medplay_export.json` says about the verification."""
        return {
            "result": "verified",
            "marker": COMPLETE_MARKER,
            "files_checked": len(self.files),
            "bytes_checked": sum(int(entry["size"]) for entry in self.files.values()),
            "skipped_newer": list(self.skipped),
        }


def step_problem(folder: Path, *, named_by_tracker: bool) -> str | None:
    """Why a `global_step_N` folder cannot be trusted (weightless, incomplete, unverified, damaged), or None."""
    if not has_weights(folder):
        return WEIGHTLESS
    if not is_complete(folder, named_by_tracker=named_by_tracker):
        return f"is incomplete (no {COMPLETE_MARKER}: a save that did not finish, or one still being written)"
    if not has_manifest(folder):
        return (
            f"has no manifest of its files (written by plain verl, an older medplay, or killed before medplay "
            f"recorded it in {COMPLETE_MARKER}), so its files cannot be verified"
        )
    if found := damage(folder):
        return f"does not match its manifest ({'; '.join(found)})"
    return None


def verified_checkpoint(path: Path, field: str = "--checkpoint") -> VerifiedCheckpoint:
    """The step folder at `path`, or the newest trustworthy one under the checkpoint root at `path`, verified.

    `UserInputError` naming `field` when `path` is neither, when the step folder fails a check, or when no step
    under the root passes (each one's reason listed).
    """
    if not path.is_dir():
        raise UserInputError(
            "no such folder: expected a global_step_N folder or a checkpoint root", file=str(path), field=field
        )
    step = {folder.name: number for number, folder in step_dirs(path.parent).items()}.get(path.name)
    if step is not None:  # a global_step_N folder itself
        problem = step_problem(path, named_by_tracker=read_tracker(path.parent) == step)
        if problem:
            others = [name for name in trustworthy(path.parent) if name != path.name]
            instead = (
                f"; the checkpoints of {path.parent} that can be exported: {', '.join(others)}"
                if others
                else f"; no other checkpoint of {path.parent} can be exported"
            )
            raise UserInputError(
                f"checkpoint {path.name} {problem}; refusing to export it{instead}", file=str(path), field=field
            )
        return VerifiedCheckpoint(step, path, _manifest_files(path))
    steps = step_dirs(path)
    if not steps:
        raise UserInputError(
            "holds no global_step_N folder: expected a step folder or a checkpoint root", file=str(path), field=field
        )
    tracked = read_tracker(path)
    skipped = []
    for step, folder in sorted(steps.items(), reverse=True):
        problem = step_problem(folder, named_by_tracker=step == tracked)
        if problem is None:
            return VerifiedCheckpoint(step, folder, _manifest_files(folder), tuple(skipped))
        skipped.append(f"{folder.name} {problem}")
    raise UserInputError(f"no checkpoint here can be exported: {'; '.join(skipped)}", file=str(path), field=field)


def trustworthy(root: Path) -> list[str]:
    """The names of the step folders under `root` that pass every check (`step_problem`), newest first."""
    tracked = read_tracker(root)
    return [
        folder.name
        for step, folder in sorted(step_dirs(root).items(), reverse=True)
        if step_problem(folder, named_by_tracker=step == tracked) is None
    ]


def _manifest_files(folder: Path) -> dict[str, dict[str, Any]]:
    """The manifest in a checkpoint's marker (`has_manifest` said it is there)."""
    return dict(json.loads((folder / COMPLETE_MARKER).read_text())["files"])
