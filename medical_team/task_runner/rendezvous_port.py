"""torch's rendezvous port for the FSDP workers, claimed for the attempt so that no other process of the host takes it.

verl's worker group asks the OS for a free port (bind to port 0, then close) and hands the number to its workers,
which listen on it seconds later, once they have started: any process of the host can be handed the same port in
between, and rank 0 then fails with `EADDRINUSE` (seen beside another run, docs/testing.md). The task runner claims
a port below the kernel's ephemeral range, which binds to port 0 and outgoing connections draw from, and above Ray's
worker ports, with a lock file that every medplay run of the host respects, and gives verl the range that starts at
it: `master_port_range`, a keyword of verl's `RayWorkerGroup` that its config does not reach (docs/verl-integration.md).
"""

from __future__ import annotations

import fcntl
import socket
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

FIRST_PORT = 20000  # above Ray's worker ports (`--min-worker-port`/`--max-worker-port`: 10002-19999 by default)
LOCK_DIR = Path(tempfile.gettempdir()) / "medplay-rendezvous-ports"
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


@dataclass(frozen=True)
class ClaimedPort:
    """A port no other medplay run of the host uses while `lock` (an open, flock-ed file) stays open."""

    port: int
    lock: IO[str]
    end: int  # the end of the range it was claimed from: the ports after it are the fallbacks on another host

    @property
    def ports(self) -> range:
        """The claimed port and the rest of its range."""
        return range(self.port, self.end)


def first_ephemeral_port(range_file: Path = EPHEMERAL_RANGE_FILE) -> int:
    """The lowest port the kernel hands out by itself (32768 on Linux's default, where the file is not there)."""
    try:
        return int(range_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def bindable(port: int) -> bool:
    """Whether a socket of this host can bind `port` now, as verl's scan of a port range asks."""
    with socket.socket() as sock:
        try:
            sock.bind(("", port))
        except OSError:
            return False
    return True


def claim_port(candidates: range, lock_dir: Path = LOCK_DIR) -> ClaimedPort | None:
    """The first port of `candidates` that no other claim holds and this host can bind; None when none is left."""
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


def rendezvous_ports() -> range:
    """The ports a rendezvous may take: above Ray's worker ports, below the kernel's ephemeral range."""
    return range(FIRST_PORT, first_ephemeral_port())


def claim_rendezvous_port() -> ClaimedPort | None:
    """A port of `rendezvous_ports()` for the FSDP workers' rendezvous, or None (said on the console)."""
    candidates = rendezvous_ports()
    claimed = claim_port(candidates)
    if claimed is None:
        print(
            f"medplay: no free port in {candidates.start}-{candidates.stop - 1} for torch's rendezvous "
            "(below the kernel's ephemeral ports); verl picks one itself",
            file=sys.stderr,
            flush=True,
        )
    return claimed


def worker_group_class(ports: range) -> type[Any]:
    """verl's `RayWorkerGroup` whose rank 0 listens on the first port of `ports` that its host can bind."""
    from verl.single_controller.ray import RayWorkerGroup

    class RendezvousWorkerGroup(RayWorkerGroup):  # type: ignore[misc]
        """verl's worker group with the port range verl scans for torch's rendezvous set."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("master_port_range", [ports.start, ports.stop])  # verl scans [start, stop)
            super().__init__(*args, **kwargs)

    return RendezvousWorkerGroup
