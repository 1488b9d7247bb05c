"""The FSDP workers' rendezvous port: the one verl's workers get is the claimed one, or the next their host can bind.

The claim is a real flock-ed file (the claims themselves: tests/run/test_port_claim.py); the worker group is verl's
own `RayWorkerGroup` on a private Ray in a child process (the test process never becomes a Ray driver), two workers
of verl's `Worker` class reading the `MASTER_PORT` that torch's rendezvous listens on (a verl contact:
docs/verl-integration.md).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from medical_team.run.port_claim import claim_port

WORKER_GROUP = textwrap.dedent(
    """
    import os, socket, sys
    import ray
    from verl.single_controller.base import Worker
    from verl.single_controller.base.decorator import Dispatch, register
    from verl.single_controller.ray import RayClassWithInitArgs, RayResourcePool
    from medical_team.task_runner.rendezvous_port import worker_group_class

    class PortReader(Worker):
        @register(dispatch_mode=Dispatch.ALL_TO_ALL)
        def rendezvous_port(self):
            return os.environ["MASTER_PORT"]

    first, end = int(sys.argv[1]), int(sys.argv[2])
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    with socket.socket() as busy:  # the first port is taken on this host: verl's scan moves on to the next
        busy.bind(("", first))
        busy.listen()
        group = worker_group_class(range(first, end))(
            resource_pool=RayResourcePool(process_on_nodes=[2], use_gpu=False, max_colocate_count=1),
            ray_cls_with_init=RayClassWithInitArgs(cls=ray.remote(PortReader)),
            device_name="cpu",
        )
        print("PORTS", *group.rendezvous_port(), flush=True)
    ray.shutdown()
    """
)


@pytest.mark.slow
def test_verls_worker_group_gives_every_rank_the_first_port_it_can_bind_from_the_claimed_one(tmp_path: Path) -> None:
    claimed = claim_port(lock_dir=tmp_path)
    assert claimed is not None
    try:
        done = subprocess.run(
            [sys.executable, "-c", WORKER_GROUP, str(claimed.port), str(claimed.ports.stop)],
            check=False,
            capture_output=True,
            text=True,
            timeout=180,
            cwd=tmp_path,
        )
    finally:
        claimed.release()
    ports = next((line.split()[1:] for line in done.stdout.splitlines() if line.startswith("PORTS")), None)
    assert ports is not None, done.stderr[-5000:]
    assert ports == [str(claimed.port + 1)] * 2
