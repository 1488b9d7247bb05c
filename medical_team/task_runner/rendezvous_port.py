"""torch's rendezvous port for the FSDP workers, claimed for the attempt so that no other process of the host takes it.

verl's worker group asks the OS for a free port (bind to port 0, then close) and hands the number to its workers,
which listen on it seconds later, once they have started: any process of the host can be handed the same port in
between, and rank 0 then fails with `EADDRINUSE` (seen beside another run, docs/testing.md). The task runner claims
a port (medical_team/run/port_claim.py) and gives verl the range that starts at it: `master_port_range`, a keyword
of verl's `RayWorkerGroup` that its config does not reach (docs/verl-integration.md).
"""

from __future__ import annotations

import sys
from typing import Any

from medical_team.run.port_claim import ClaimedPort, claim_port, claimable_ports


def claim_rendezvous_port() -> ClaimedPort | None:
    """A claimed port for the FSDP workers' rendezvous, or None (said on the console: verl then picks one itself)."""
    claimed = claim_port()
    if claimed is None:
        candidates = claimable_ports()
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
