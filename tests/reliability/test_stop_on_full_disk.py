"""A stop request on a full or read-only disk: the line reaches the terminal and the process exits 143 within the grace.

Each case is a real process with medplay's SIGTERM handler, its output sent to a run log by `output_to_log` (as
`medplay train` does) and its stdout/stderr pipes standing in for the terminal. The faults are real files:

- a full disk for the log: the log is `/dev/full`, where every write fails with ENOSPC;
- an unwritable checkpoint folder: its parent is a regular file, so creating the folder or the stop request fails
  with ENOTDIR for any user, root included (tests here may run as root, for whom chmod 0o500 stops nothing); the
  read-only folder itself (chmod 0o500, EACCES) runs too where the tests do not run as root.

Run: PYTHONPATH=tests .venv/bin/python -m pytest -q tests/reliability/test_stop_on_full_disk.py
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from medical_team.reliability.stop_request import STOP_FILE

FULL_DISK = Path("/dev/full")
MARGIN_S = 120  # on top of the grace: the bound on a wait that only a process that never exits reaches

# Blocks like the launcher: the main thread waits (in `ray.get`) inside `output_to_log`; an interrupt that comes
# with a reason to stop now ends the run through the launcher's own report. Modes: "wait" sleeps; "swallow" loses
# whatever the signal handler raises, as Ray does while the trainer runs, so that only the grace period's timer
# is left; "chatter" says lines without a pause, so that the signal lands inside one of them.
CHILD = """
import sys, time
from pathlib import Path
from medical_team.launcher.console.console import output_to_log, say
from medical_team.launcher.failures.run_errors import end_run, failure_report
from medical_team.launcher.graceful_stop import install_sigterm_handler, stopped_while
from medical_team.reliability.stop_request import StoppedWhileWaitingError

root, log, grace, mode = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
try:
    with output_to_log(log, stream=sys.argv[5] == "stream"):
        install_sigterm_handler(root, grace)
        said = False
        while True:
            try:
                if not said:
                    said = True
                    say("ready")
                if mode == "chatter":
                    say("a startup line")
                else:
                    time.sleep(600)
            except BaseException:
                if mode != "swallow":
                    raise
except KeyboardInterrupt:
    if not stopped_while:
        raise
    end_run(*failure_report(StoppedWhileWaitingError(stopped_while[0])))
"""


@dataclass(frozen=True)
class Stopped:
    """How a child ended after its signal: exit status, seconds from the signal, and its terminal output."""

    status: int
    seconds: float
    stdout: str
    stderr: str


def stop(
    root: Path,
    log: Path,
    grace_s: float,
    sig: signal.Signals = signal.SIGTERM,
    mode: str = "wait",
    stream: bool = False,
) -> Stopped:
    """Start CHILD, send `sig` once it says `ready`, and wait at most the grace period plus MARGIN_S for it to end.

    `stream`: the log streams to the terminal too (`medplay train --verbose`, through `tee`).
    """
    args = [sys.executable, "-c", CHILD, str(root), str(log), str(grace_s), mode, "stream" if stream else "quiet"]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        said = _until_ready(process)
        sent = time.monotonic()
        process.send_signal(sig)
        out, err = process.communicate(timeout=grace_s + MARGIN_S)
    except (subprocess.TimeoutExpired, AssertionError) as error:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"{error}; stdout: {out!r}; stderr: {err!r}")
    return Stopped(process.returncode, time.monotonic() - sent, said + out, err)


def _until_ready(process: subprocess.Popen[str], timeout_s: float = 180) -> str:
    """What the child said up to and including its `ready` line (read from the pipe itself, with a deadline)."""
    assert process.stdout is not None
    said = b""
    deadline = time.monotonic() + timeout_s
    while b"ready\n" not in said:
        left = deadline - time.monotonic()
        assert left > 0 and select.select([process.stdout], [], [], left)[0], f"not ready within {timeout_s:.0f} s"
        chunk = os.read(process.stdout.fileno(), 65536)
        assert chunk, f"ended before it was ready: {said!r}"
        said += chunk
    return said.decode()


@pytest.fixture
def unwritable_root(tmp_path: Path) -> Path:
    """A checkpoint folder that cannot be created: its parent is a regular file."""
    parent = tmp_path / "disk"
    parent.write_text("a regular file where a folder should be\n")
    return parent / "checkpoints"


@pytest.fixture
def read_only_root(tmp_path: Path) -> Iterator[Path]:
    """An existing checkpoint folder without write permission (stops writes only for a user other than root)."""
    if os.geteuid() == 0:
        pytest.skip("root writes into a 0o500 folder; the ENOTDIR cases cover root")
    root = tmp_path / "checkpoints"
    root.mkdir()
    root.chmod(0o500)
    yield root
    root.chmod(0o700)


@pytest.mark.parametrize("stream", [False, True], ids=["quiet", "verbose"])
def test_a_full_log_still_shows_the_stop_on_the_terminal_and_the_grace_ends_it(tmp_path: Path, stream: bool) -> None:
    root = tmp_path / "checkpoints"
    ended = stop(root, FULL_DISK, grace_s=2, stream=stream)
    assert ended.status == 143, ended
    assert ended.seconds < 2 + MARGIN_S
    assert "medplay: SIGTERM received: saving a checkpoint and stopping (grace period 2 s)" in ended.stdout
    # Streaming, `tee` takes stderr's lines too and carries on to the terminal when the log fails.
    errors = ended.stdout if stream else ended.stderr
    assert "medplay: training did not stop within 2 s of the stop request; exiting" in errors
    assert (root / STOP_FILE).is_file()  # a trainer would have seen it, saved and ended with 0


@pytest.mark.parametrize(
    ("log_on_full_disk", "sig"),
    [(False, signal.SIGTERM), (True, signal.SIGTERM), (True, signal.SIGINT)],
    ids=["log-ok-SIGTERM", "log-full-SIGTERM", "log-full-SIGINT"],
)
def test_an_unwritable_checkpoint_folder_stops_at_once(
    tmp_path: Path, unwritable_root: Path, log_on_full_disk: bool, sig: signal.Signals
) -> None:
    # A 60 s grace: a pass shows the stop did not wait for it (no line from the grace timer).
    ended = stop(unwritable_root, FULL_DISK if log_on_full_disk else tmp_path / "run.log", 60, sig)
    assert ended.status == 143, ended
    assert f"medplay: {sig.name} received: saving a checkpoint and stopping (grace period 60 s)" in ended.stdout
    failed = (
        f"medplay: cannot write the stop request {unwritable_root / STOP_FILE} (Not a directory): "
        "the trainer cannot be told to save; stopping now"
    )
    assert failed in ended.stderr.splitlines()
    last = f"medplay train: stopped: {sig.name} received but the stop request could not be written (Not a directory)"
    assert ended.stderr.splitlines()[-1] == last
    assert "did not stop within" not in ended.stderr


def test_a_read_only_checkpoint_folder_stops_at_once(tmp_path: Path, read_only_root: Path) -> None:
    ended = stop(read_only_root, tmp_path / "run.log", 60)
    assert ended.status == 143, ended
    assert f"medplay: cannot write the stop request {read_only_root / STOP_FILE} (Permission denied)" in ended.stderr
    assert "did not stop within" not in ended.stderr


def test_the_grace_period_ends_a_process_that_lost_the_interrupt(unwritable_root: Path) -> None:
    ended = stop(unwritable_root, FULL_DISK, grace_s=2, mode="swallow")
    assert ended.status == 143, ended
    assert ended.seconds < 2 + MARGIN_S
    assert f"medplay: cannot write the stop request {unwritable_root / STOP_FILE} (Not a directory)" in ended.stderr
    assert "medplay: training did not stop within 2 s of the stop request; exiting" in ended.stderr


def test_a_signal_inside_another_line_is_still_said(unwritable_root: Path) -> None:
    # The handler's line would be a reentrant write into the stream the main thread is writing.
    ended = stop(unwritable_root, FULL_DISK, 60, mode="chatter")
    assert ended.status == 143, ended.stderr
    assert "medplay: SIGTERM received: saving a checkpoint and stopping (grace period 60 s)" in ended.stdout
    last = "medplay train: stopped: SIGTERM received but the stop request could not be written (Not a directory)"
    assert ended.stderr.splitlines()[-1] == last
