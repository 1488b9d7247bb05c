"""Ports a process of medplay claims on its host, so that no other process of the host is handed the same one.

Asking the OS for a free port (bind to port 0, then close) and giving the number to a process that listens on it
later leaves a window in which any process of the host can be handed the same port (`EADDRINUSE`, seen beside
another run: docs/testing.md). A claim takes a port between Ray's worker ports and the kernel's ephemeral range,
which binds to port 0 and outgoing connections draw from, with a flock-ed lock file that every claim of the host
respects: the port is the claimer's while its lock stays open, and free again when its process ends.
"""

from __future__ import annotations

import fcntl
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

FIRST_PORT = 20000  # above Ray's worker ports (`--min-worker-port`/`--max-worker-port`: 10002-19999 by default)
LOCK_DIR = Path(tempfile.gettempdir()) / "medplay-ports"
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


class NoPortLeft(RuntimeError):
    """Every port of the claimable range is claimed by another process or listened on."""


@dataclass(frozen=True)
class ClaimedPort:
    """A port no other claim of the host takes while `lock` (an open, flock-ed file) stays open."""

    port: int
    lock: IO[str]
    end: int  # the end of the range it was claimed from: the ports after it are the fallbacks on another host

    @property
    def ports(self) -> range:
        """The claimed port and the rest of its range."""
        return range(self.port, self.end)

    def release(self) -> None:
        """Give the port back to the host's other claims."""
        self.lock.close()


_held_for_the_process: list[ClaimedPort] = []  # claims whose locks this process keeps open until it exits


def first_ephemeral_port(range_file: Path = EPHEMERAL_RANGE_FILE) -> int:
    """The lowest port the kernel hands out by itself (32768 on Linux's default, where the file is not there)."""
    try:
        return int(range_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def claimable_ports() -> range:
    """The ports a claim may take: above Ray's worker ports, below the kernel's ephemeral range."""
    return range(FIRST_PORT, first_ephemeral_port())


def bindable(port: int) -> bool:
    """Whether a socket of this host can bind `port` on every address now."""
    with socket.socket() as sock:
        try:
            sock.bind(("", port))
        except OSError:
            return False
    return True


def claim_port(candidates: range | None = None, lock_dir: Path = LOCK_DIR) -> ClaimedPort | None:
    """The first port of `candidates` (default `claimable_ports()`) that no other claim holds and this host can bind;
    None when none is left."""
    candidates = claimable_ports() if candidates is None else candidates
    lock_dir.mkdir(parents=True, exist_ok=True)
    for port in candidates:
        lock = (lock_dir / f"{port}.lock").open("w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        if bindable(port):
            return ClaimedPort(port, lock, candidates.stop)
        lock.close()
    return None


def hold_port(purpose: str, candidates: range | None = None, lock_dir: Path = LOCK_DIR) -> int:
    """A claimed port whose lock this process keeps until it exits, for `purpose` (named in the error if none is
    left): for a server or process group that this process, or a child it outlives, listens on."""
    candidates = claimable_ports() if candidates is None else candidates
    claimed = claim_port(candidates, lock_dir)
    if claimed is None:
        raise NoPortLeft(
            f"no free port for {purpose} in {candidates.start}-{candidates.stop - 1} (below the kernel's ephemeral "
            f"ports): every one is listened on or claimed by another process (lock files in {lock_dir})"
        )
    _held_for_the_process.append(claimed)
    return claimed.port


def hold_ports(count: int, purpose: str) -> list[int]:
    """`count` different ports held as `hold_port` holds one."""
    return [hold_port(purpose) for _ in range(count)]
