"""A real, tiny filesystem for one command: a tmpfs of a few KiB mounted in a private mount namespace.

A full disk for one file only. A file-size limit (RLIMIT_FSIZE) is per process and inherited, so in a training
it would also stop Ray's object store, the checkpoints and every log past the same size; this tmpfs fills up for
the files in it alone, and the mount is seen only by the command's processes and is gone when they end, so
nothing else on the machine is touched. What the command left in the mount is copied to a folder outside it.

Needs `unshare` (util-linux) and either root or unprivileged user namespaces; `tiny_filesystem_unavailable` says
why not, for a skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

CANNOT_MOUNT = 97  # the wrapper's exit status when the mount failed
# $1 size, $2 the folder to mount over, $3 the folder to copy its files to afterwards; the rest is the command.
_WRAPPER = (
    'size=$1 dir=$2 out=$3; shift 3; mount -t tmpfs -o "size=$size" medplay-test "$dir" || exit 97; '
    '"$@"; status=$?; cp -R "$dir/." "$out/"; exit $status'
)


def _unshare() -> list[str]:
    """Root makes a mount namespace of its own; any other user needs a user namespace in which it is root."""
    if os.geteuid() == 0:
        return ["unshare", "--mount", "--propagation", "private"]
    return ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]


def on_tiny_filesystem(size: str, mount_dir: Path, copy_to: Path, command: Sequence[str]) -> list[str]:
    """`command` with a tmpfs of `size` (e.g. "8k") over `mount_dir`, its files copied to `copy_to` after it ends."""
    mount_dir.mkdir(parents=True, exist_ok=True)
    copy_to.mkdir(parents=True, exist_ok=True)
    return [*_unshare(), "sh", "-c", _WRAPPER, "sh", size, str(mount_dir), str(copy_to), *command]


def seen_by(pid: int, mount_dir: Path) -> Path:
    """The tmpfs that process `pid` (the wrapper of `on_tiny_filesystem`) mounted at `mount_dir`, as its processes see
    it: through `/proc/PID/root`, since the mount lives in their namespace only."""
    return Path(f"/proc/{pid}/root{mount_dir}")


def fill_leaving(pid: int, mount_dir: Path, left_free: int) -> None:
    """Fill the tmpfs that process `pid` sees at `mount_dir` (`seen_by`) until `left_free` bytes are free there."""
    seen = seen_by(pid, mount_dir)
    with (seen / "filler").open("wb") as filler:
        os.posix_fallocate(filler.fileno(), 0, shutil.disk_usage(seen).free - left_free)


def tiny_filesystem_unavailable() -> str | None:
    """Why this machine cannot mount a tiny filesystem for a test (None: it can)."""
    if shutil.which("unshare") is None:
        return "needs `unshare` (util-linux)"
    with tempfile.TemporaryDirectory() as scratch:
        probe = on_tiny_filesystem("4k", Path(scratch) / "mount", Path(scratch) / "copy", ["true"])
        result = subprocess.run(probe, capture_output=True, text=True, timeout=60, check=False)
    if result.returncode != 0:
        return f"cannot mount a tmpfs in a private mount namespace: {result.stderr.strip() or result.returncode}"
    return None
