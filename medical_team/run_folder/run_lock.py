"""One run per output folder: a kernel lock (`flock`) on `<output folder>/run.lock`, held by the launcher.

`medplay train` and `medplay sft` take it before they write anything into the folder and hold it until the run
returns (`release_run_lock`) or its process exits; a second run on the same folder ends at once with a `UserInputError` (exit status 2) naming the
folder and the holder. The kernel drops the lock when the holder's last descriptor closes, so a killed run
(SIGKILL included) never blocks the next one; the pid and host written into the file make the message, and tell the
trainer which process holds the run (`lock_holder`: medical_team/run/processes.py's roots of the run).

Only the process that took the lock holds it: the descriptor is close-on-exec, and a child forked without
exec (multiprocessing, data-loader workers) closes its copy at once, so no process left behind by a killed
launcher keeps the folder locked. The appliance's pipeline (entrypoints/pipeline.sh) takes the lock on a
descriptor of its own before its first step writes to the folder and hands that descriptor to its `medplay
train` through `MEDPLAY_RUN_LOCK_FD`; the launcher adopts it instead of refusing its own pipeline. `medplay train`'s
watchdog (medical_team/watchdog/) holds the output folder's lock the same way for each attempt it starts.

A pipeline that ends before it writes to the folder (the probe refused the host, a mistake in the settings) removes
the lock file it created, still holding it (`drop`), so a refused run leaves the volume as it found it. A run that
opened the file before it went then locks a file no longer in the folder: every taker checks, once locked, that
the folder's lock file is still the one it locked, and opens it again when it is not.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import sys
from pathlib import Path

from medical_team.common.errors import UserInputError

LOCK_NAME = "run.lock"
# `take`'s exit status when the lock file was removed (`drop`) between the shell's open and the lock: open it again
# (sysexits' EX_TEMPFAIL).
REPLACED_EXIT = 75
# Opens of the lock file before giving up, each one lost to a run that removed the file after the open.
_OPEN_ATTEMPTS = 10
# A descriptor of the lock file inherited from a parent that holds the lock for this run (the pipeline).
INHERITED_FD_ENV = "MEDPLAY_RUN_LOCK_FD"
# The lock file (device, inode) -> the descriptor this process holds it through.
_held: dict[tuple[int, int], int] = {}


def lock_path(folder: Path) -> Path:
    """The lock file of an output folder."""
    return folder / LOCK_NAME


def hold_run_lock(folder: Path) -> None:
    """Lock `folder` for this run until the process exits; a `UserInputError` when another run holds it.

    Creates the folder and its lock file when missing and changes nothing else; calling it again in a
    process that holds the lock does nothing.
    """
    path = lock_path(folder)
    for _ in range(_OPEN_ATTEMPTS):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise UserInputError(f"cannot create the run's lock file: {error.strerror}", file=str(path)) from error
        try:
            key = _file_key(fd)
            if key in _held:
                os.close(fd)
                return
            inherited = _inherited_fd(key)
            if inherited is not None and _try_lock(inherited, path):
                os.close(fd)
                os.set_inheritable(inherited, False)
                _held[key] = inherited
                return
            if not _try_lock(fd, path):
                raise _in_use(folder, _holder(fd))
            if _file_key_of(path) != key:  # removed by a pipeline that ended before writing (`drop`): open it again
                os.close(fd)
                continue
            _record_holder(fd, os.getpid())
        except BaseException:
            os.close(fd)
            raise
        _held[key] = fd
        return
    raise _replaced(path)


def release_run_lock(folder: Path) -> None:
    """Let go of `folder`'s lock if this process holds it (a pipeline's inherited lock stays with the pipeline)."""
    key = _file_key_of(lock_path(folder))
    fd = _held.pop(key, None) if key is not None else None
    if fd is not None:
        os.close(fd)


def held_descriptor(folder: Path) -> int | None:
    """The descriptor through which this process holds `folder`'s lock (to hand a child through
    `MEDPLAY_RUN_LOCK_FD`, as the run's watchdog hands its attempts), None when it holds none."""
    key = _file_key_of(lock_path(folder))
    return _held.get(key) if key is not None else None


def take_inherited(folder: Path, fd: int, pid: int) -> None:
    """Lock `folder` through `fd`, a descriptor of its lock file that a shell keeps open, for process `pid`.

    The lock belongs to the open file, so it stays with the shell after this process exits. `LockFileReplaced` when
    the file was removed (`drop`) after the shell opened it: the shell opens it again and retries.
    """
    path = lock_path(folder)
    if _file_key(fd) != _file_key_of(path) and os.fstat(fd).st_nlink:
        raise UserInputError(f"descriptor {fd} is not this folder's lock file", file=str(path))
    if not _try_lock(fd, path):
        raise _in_use(folder, _holder(fd))
    if _file_key(fd) != _file_key_of(path):  # removed (`drop`) since the shell opened it
        fcntl.flock(fd, fcntl.LOCK_UN)
        raise _replaced(path)
    _record_holder(fd, pid)


def drop(folder: Path, fd: int) -> bool:
    """Remove `folder`'s lock file, which this process holds through `fd`, as a run that wrote nothing there yet.

    Removed while still locked, so no other run holds it meanwhile; those that opened it before check, once
    they lock it, that it is still the folder's (`hold_run_lock`, `take_inherited`). False, and nothing removed,
    when `fd` is not the folder's lock file or another open file holds the lock.
    """
    path = lock_path(folder)
    if _file_key(fd) != _file_key_of(path) or not _try_lock(fd, path):
        return False
    path.unlink()
    return True


def _file_key(fd: int) -> tuple[int, int]:
    stat = os.fstat(fd)
    return stat.st_dev, stat.st_ino


def _file_key_of(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def _inherited_fd(key: tuple[int, int]) -> int | None:
    """The descriptor named by MEDPLAY_RUN_LOCK_FD when it is open on the same lock file."""
    value = os.environ.get(INHERITED_FD_ENV, "")
    if not value.isdigit():
        return None
    try:
        return int(value) if _file_key(int(value)) == key else None
    except OSError:
        return None


def _try_lock(fd: int, path: Path) -> bool:
    """Take the exclusive lock without waiting; False when another open file holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return False
        raise UserInputError(f"cannot lock the run's lock file: {error.strerror}", file=str(path)) from error
    return True


def _record_holder(fd: int, pid: int) -> None:
    """Write who holds the lock (for the message a refused run shows, and `lock_holder`)."""
    record = json.dumps({"pid": pid, "host": socket.gethostname()}).encode() + b"\n"
    os.ftruncate(fd, 0)
    os.pwrite(fd, record, 0)


def lock_holder(folder: Path) -> int | None:
    """The pid that recorded holding `folder`'s lock when it did so on this host (None: no record, another host)."""
    try:
        record = json.loads(lock_path(folder).read_text())
        pid, host = int(record["pid"]), record["host"]
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return pid if host == socket.gethostname() else None


def _holder(fd: int) -> str:
    """`pid N on host H` as the holder recorded it, or why it cannot be said."""
    try:
        record = json.loads(os.pread(fd, 4096, 0))
        return f"pid {int(record['pid'])} on host {record['host']}"
    except (OSError, ValueError, TypeError, KeyError):
        return "a process that has not recorded its pid yet"


class LockFileReplaced(UserInputError):
    """The lock file was removed (`drop`) between this run's open of it and its lock."""


def _replaced(path: Path) -> LockFileReplaced:
    return LockFileReplaced(
        "removed by a run that ended before writing, after this run opened it; start the run again", file=str(path)
    )


def _in_use(folder: Path, holder: str) -> UserInputError:
    return UserInputError(
        f"in use by another medplay run ({holder}; lock: {LOCK_NAME}); wait for it to end, stop it, "
        "or use another output folder",
        file=str(folder),
    )


def _close_in_forked_child() -> None:
    # The forked copy shares the open file with the parent; closing it leaves the lock with the parent alone.
    for fd in _held.values():
        try:
            os.close(fd)
        except OSError:
            pass
    _held.clear()


os.register_at_fork(after_in_child=_close_in_forked_child)


def main(argv: list[str]) -> int:
    """For shell scripts: `name` prints the lock file's name; `take FOLDER FD PID` locks FOLDER through FD (exit
    REPLACED_EXIT: the file was removed, open it again); `drop FOLDER FD` removes the lock file FD holds."""
    if argv[:1] == ["name"] and len(argv) == 1:
        print(LOCK_NAME)
        return 0
    if argv[:1] == ["take"] and len(argv) == 4:
        try:
            take_inherited(Path(argv[1]), int(argv[2]), int(argv[3]))
        except UserInputError as error:
            print(f"error: {error.one_line()}", file=sys.stderr)
            return REPLACED_EXIT if isinstance(error, LockFileReplaced) else 2
        return 0
    if argv[:1] == ["drop"] and len(argv) == 3:
        return 0 if drop(Path(argv[1]), int(argv[2])) else 1
    print("usage: python -m medical_team.run_folder.run_lock name | take FOLDER FD PID | drop FOLDER FD", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
