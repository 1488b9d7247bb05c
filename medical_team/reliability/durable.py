"""Writes that survive a crash or a power cut: fsync of files and folders, and atomic replacement of small files.

A file's data is on disk once the file is fsynced; its name (creation, rename) once its folder is fsynced too.
Used by the checkpoint commits (`checkpoints.py`) and the metrics file (medical_team/task_runner/metrics_file.py).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def fsync_directory(folder: Path) -> None:
    """Make the names in `folder` (files created, renamed or removed there) durable."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def fsync_tree(folder: Path) -> None:
    """fsync every file under `folder`, then every folder, deepest first, `folder` itself last."""
    for parent, _, files in os.walk(folder, topdown=False):  # bottom-up: each folder after what it holds
        for name in files:
            path = Path(parent) / name
            if path.is_symlink():  # verl writes none; a link's target is not this checkpoint's to sync
                continue
            descriptor = os.open(path, os.O_RDONLY)
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
        fsync_directory(Path(parent))


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text` so readers see the old or the new content, never a partial file.

    The temporary file is removed when the write or the replacement fails, and the folder is fsynced after it.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    fsync_directory(path.parent)
