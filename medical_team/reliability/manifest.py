"""A checkpoint folder's manifest: each file's size and a digest of its content, checked before a resume trusts it.

`StepCommits.commit` writes the manifest into the completion marker once every file is fsynced; `repair_tracker`
skips a checkpoint whose files no longer match it (missing, another size, another digest).

The digest is blake2b (the standard library's) of the whole file up to `WHOLE_FILE_LIMIT`, and of `SAMPLES`
chunks of `SAMPLE_BYTES` spread evenly over a larger one, the first and the last included: about 0.03 s per large
file, where whole-file digests of a 4B-model LoRA checkpoint (20-25 GB) would add 15-90 s to every save and every
resume (measured: docs/reliability.md, "A killed run resumes from the newest complete checkpoint"). Sizes catch a
truncated or emptied file; the samples catch zeroed or overwritten stretches that keep the size, unless the damage
falls between samples.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SAMPLE_BYTES = 1 << 20
SAMPLES = 8
WHOLE_FILE_LIMIT = SAMPLES * SAMPLE_BYTES  # files up to this size are digested whole
DIGEST = "blake2b"  # the key of each file's digest in the manifest
SHOWN_DIGEST_CHARS = 16  # of a digest in a warning


def digest(path: Path, size: int) -> str:
    """The content digest of the file at `path`, whose size is `size` (see the module docstring)."""
    hasher = hashlib.blake2b(digest_size=16)
    with path.open("rb") as file:
        if size <= WHOLE_FILE_LIMIT:
            hasher.update(file.read())
        else:
            for index in range(SAMPLES):
                file.seek((size - SAMPLE_BYTES) * index // (SAMPLES - 1))
                hasher.update(file.read(SAMPLE_BYTES))
    return hasher.hexdigest()


def manifest(folder: Path, *, leave_out: str) -> dict[str, dict[str, Any]]:
    """Every regular file under `folder` but the top-level `leave_out`, by relative path: its size and digest."""
    files = {}
    for parent, _, names in os.walk(folder):
        for name in names:
            path = Path(parent) / name
            relative = path.relative_to(folder).as_posix()
            if relative == leave_out or path.is_symlink():
                continue
            size = path.stat().st_size
            files[relative] = {"size": size, DIGEST: digest(path, size)}
    return dict(sorted(files.items()))


def mismatches(folder: Path, files: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """What in `folder` no longer matches the manifest `files`: each file missing or of another size or digest."""
    found = []
    for relative, entry in files.items():
        path = folder / relative
        if not path.is_file():
            found.append(f"{relative}: missing (expected {entry['size']} bytes)")
            continue
        size = path.stat().st_size
        if size != entry["size"]:
            found.append(f"{relative}: expected {entry['size']} bytes, found {size}")
            continue
        actual = digest(path, size)
        if actual != entry[DIGEST]:
            expected, actual = entry[DIGEST][:SHOWN_DIGEST_CHARS], actual[:SHOWN_DIGEST_CHARS]
            found.append(f"{relative}: content differs ({DIGEST} expected {expected}, found {actual})")
    return found
