"""The terminal and the run log: `say` talks to the person running medplay, `output_to_log` takes everything else.

While `output_to_log(path)` is active, this process's file descriptors 1 and 2 point at the log file,
so the log receives what Python prints, what C/C++ libraries write, what Ray forwards from its
workers (`log_to_driver`) and what child processes inherit; `say` still reaches the terminal (and
the log). With `stream=True` the same output also streams to the terminal through `tee`.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

# The terminal's stdout and stderr while the process's own go to a log; None otherwise.
_terminal: tuple[TextIO, TextIO] | None = None


def say(message: str, *, err: bool = False) -> None:
    """Show a message on the terminal (stderr with `err`), then in the run log if there is one; never raises for either.

    The terminal comes first and on its own: a log that cannot be written (a full disk) still lets the user read
    the line, and a line that cannot be shown is not worth failing the caller (a signal handler, a watchdog).
    """
    if _terminal is not None:
        _write(_terminal[1] if err else _terminal[0], message)
    _write(sys.stderr if err else sys.stdout, message)  # the log while output_to_log is active, else the terminal


def _write(stream: TextIO, message: str) -> None:
    try:
        print(message, file=stream, flush=True)
    except RuntimeError:
        # "reentrant call": a signal handler's line came while this thread was inside a write to the same
        # stream (SIGTERM during another line), so the line goes straight to the file descriptor.
        with contextlib.suppress(OSError, ValueError):
            os.write(stream.fileno(), f"{message}\n".encode(errors="replace"))
    except (OSError, ValueError):  # ENOSPC, EIO, EPIPE; ValueError: a terminal closed by another thread
        pass


def output_is_logged() -> bool:
    """True while this process's output goes to a run log instead of the terminal."""
    return _terminal is not None


@contextmanager
def output_to_log(path: Path, *, stream: bool = False) -> Iterator[Path]:
    """Send fd 1 and 2 to `path` (appended) for the duration; with `stream`, to the terminal as well.

    An exception leaving the block is written to the log with its traceback before fds are restored.
    """
    global _terminal
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    tee: subprocess.Popen[bytes] | None = None
    if stream:
        # An external `tee` keeps streaming even while this process holds the GIL or is busy.
        read_end, target = os.pipe()
        tee = subprocess.Popen(["tee", "-a", str(path)], stdin=read_end, stdout=saved[0])
        os.close(read_end)
    else:
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(target, 1)
    os.dup2(target, 2)
    if not stream:
        _terminal = (os.fdopen(os.dup(saved[0]), "w"), os.fdopen(os.dup(saved[1]), "w"))
    try:
        yield path
    except BaseException:
        # A log that cannot be written (a full disk) must not replace the exception nor keep the fds on it.
        with contextlib.suppress(OSError):
            traceback.print_exc()
        raise
    finally:
        for std in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError):
                std.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)
        if _terminal is not None:
            for terminal in _terminal:
                terminal.close()
            _terminal = None
        if tee is not None:
            try:
                tee.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass  # a child process still holds the pipe; tee ends when it does
