"""The FSDP workers' rendezvous port: claimed on the host outside the ephemeral range, and the one verl's workers get.

The claims are real flock-ed files and real sockets; the worker group is verl's own `RayWorkerGroup` on a private
Ray in a child process (the test process never becomes a Ray driver), two workers of verl's `Worker` class reading
the `MASTER_PORT` that torch's rendezvous listens on (a verl contact: docs/verl-integration.md).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from medical_team.task_runner.rendezvous_port import (
    FIRST_PORT,
    claim_port,
    first_ephemeral_port,
    rendezvous_ports,
)

CLAIM_AND_HOLD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from medical_team.task_runner.rendezvous_port import claim_port
    claimed = claim_port(range(int(sys.argv[1]), int(sys.argv[2])), Path(sys.argv[3]))
    print(claimed.port, flush=True)
    time.sleep(600)
    """
)


def test_the_ports_lie_above_rays_worker_ports_and_below_the_ephemeral_range(tmp_path: Path) -> None:
    ports = rendezvous_ports()
    assert ports.start == FIRST_PORT > 19999  # Ray's default `--max-worker-port`
    assert ports.stop == first_ephemeral_port() and len(ports) > 1000
    (tmp_path / "range").write_text("1024\t65535\n")
    assert first_ephemeral_port(tmp_path / "range") == 1024
    assert first_ephemeral_port(tmp_path / "missing") == 32768


def test_a_port_another_run_holds_is_skipped_until_its_process_ends(tmp_path: Path) -> None:
    candidates = rendezvous_ports()
    other = subprocess.Popen(
        [sys.executable, "-c", CLAIM_AND_HOLD, str(candidates.start), str(candidates.stop), str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert other.stdout is not None
        held = int(other.stdout.readline())
        mine = claim_port(range(held, candidates.stop), tmp_path)
        assert mine is not None and mine.port > held
        mine.lock.close()
    finally:
        other.kill()
        other.wait()
    again = claim_port(range(held, held + 1), tmp_path)  # the lock went with its process
    assert again is not None and again.port == held
    again.lock.close()


def test_a_port_a_socket_listens_on_is_skipped(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert claim_port(range(port, port + 1), tmp_path) is None


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
    claimed = claim_port(rendezvous_ports(), tmp_path)
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
        claimed.lock.close()
    ports = next((line.split()[1:] for line in done.stdout.splitlines() if line.startswith("PORTS")), None)
    assert ports is not None, done.stderr[-5000:]
    assert ports == [str(claimed.port + 1)] * 2
