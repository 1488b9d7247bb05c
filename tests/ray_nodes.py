"""A Ray cluster of several nodes on this machine for end-to-end tests: one `ray start --block` process per node.

Each node runs in its own session with its own temp dir and free ports, so `stop_session` stops it, and
everything it started, whatever the test did. Nodes take their own loopback addresses (127.0.0.2,
127.0.0.3, ...): Ray 2.60 rewrites `--node-ip-address=127.0.0.1` to the host's network address
(`ray._private.services.resolve_ip_for_localhost`), but keeps the rest of 127.0.0.0/8, and distinct
addresses make verl's node order (it sorts placement groups by node address) the order the nodes were
started in. Token authentication is on, as for any head of Ray 2.60: a fresh token per cluster.

Run as a script, it prints the cluster's nodes and actors as JSON (`python ray_nodes.py ADDRESS
[--nodes N]`, waiting for N live nodes first); tests call it in a subprocess so that the test process
never becomes a Ray driver.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VENV_BIN = Path(sys.executable).parent
FIRST_NODE_IP = 2  # 127.0.0.2: the head; the next nodes count up
NODE_RESOURCE_PREFIX = "node_name_"  # each node advertises {"node_name_<name>": 1}, so tests can tell nodes apart


@dataclass(frozen=True)
class RayNode:
    """One `ray start` process of the cluster."""

    name: str
    ip: str
    process: subprocess.Popen
    log: Path

    @property
    def resource(self) -> str:
        """The custom resource only this node advertises."""
        return f"{NODE_RESOURCE_PREFIX}{self.name}"


@dataclass(frozen=True)
class RayCluster:
    """A running cluster: its GCS address, the environment a client needs to join it, and its nodes."""

    address: str
    env: dict[str, str]
    nodes: tuple[RayNode, ...]

    def state(self, wait_for_nodes: int = 0, timeout_s: float = 180) -> dict[str, Any]:
        """Nodes and actors as the GCS sees them (read in a subprocess, see the module docstring)."""
        command = [sys.executable, __file__, self.address, "--nodes", str(wait_for_nodes), "--timeout", str(timeout_s)]
        result = subprocess.run(
            command, env=self.env, capture_output=True, text=True, timeout=timeout_s + 60, check=False
        )
        assert result.returncode == 0, f"reading the cluster's state failed:\n{result.stderr[-4000:]}"
        return json.loads(result.stdout.splitlines()[-1])


def _node_command(ip: str, resource: str, temp_dir: Path, num_cpus: int, num_gpus: int, head_port: int) -> list[str]:
    """`ray start --block` for one node; the first node (head) listens on head_port, the others join it."""
    listen, grpc, runtime_env, metrics = (str(port) for port in _free_ports(4))
    command = [
        str(VENV_BIN / "ray"), "start", "--block", "--disable-usage-stats", f"--node-ip-address={ip}",
        f"--temp-dir={temp_dir}", f"--num-cpus={num_cpus}", f"--num-gpus={num_gpus}",
        f"--resources={json.dumps({resource: 1})}",
        # Ports with fixed defaults would collide between nodes of one machine (or with other clusters).
        f"--dashboard-agent-listen-port={listen}", f"--dashboard-agent-grpc-port={grpc}",
        f"--runtime-env-agent-port={runtime_env}", f"--metrics-export-port={metrics}",
    ]  # fmt: skip
    if ip.endswith(f".{FIRST_NODE_IP}"):
        client, dashboard = (str(port) for port in _free_ports(2))
        return [*command, "--head", f"--port={head_port}", f"--ray-client-server-port={client}",
                "--include-dashboard=false", f"--dashboard-port={dashboard}"]  # fmt: skip
    return [*command, f"--address={_loopback_ip(FIRST_NODE_IP)}:{head_port}"]


def _loopback_ip(index: int) -> str:
    return f"127.0.0.{index}"


def _free_ports(count: int) -> list[int]:
    from processes import free_ports

    return free_ports(count)


def _client_env(token_path: Path) -> dict[str, str]:
    """This environment without Ray's, pytest's and the trainer's own variables, plus the cluster's token."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("RAY_", "PYTEST_"))}
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        RAY_AUTH_MODE="token",
        RAY_AUTH_TOKEN_PATH=str(token_path),
    )
    return env


@contextmanager
def ray_cluster(names: Sequence[str], num_cpus: int, num_gpus: int, log_dir: Path) -> Iterator[RayCluster]:
    """Start one node per name (the first is the head), wait until all are alive, and always stop them after."""
    from processes import stop_session

    temp_root = Path(tempfile.mkdtemp(prefix="mp-ray-", dir="/tmp"))  # short: Ray's socket paths are limited
    token = temp_root / "token"
    token.write_text(secrets.token_hex(32))
    env = _client_env(token)
    # The nodes drain for 5 s at most when stopped (Ray's default waits much longer).
    node_env = {**env, "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "5"}
    (head_port,) = _free_ports(1)
    address = f"{_loopback_ip(FIRST_NODE_IP)}:{head_port}"
    started: list[RayNode] = []
    try:
        for index, name in enumerate(names):
            ip = _loopback_ip(FIRST_NODE_IP + index)
            temp_dir = temp_root / name
            temp_dir.mkdir()
            log = log_dir / f"ray-node-{name}.log"
            command = _node_command(ip, f"{NODE_RESOURCE_PREFIX}{name}", temp_dir, num_cpus, num_gpus, head_port)
            with log.open("w") as out:
                process = subprocess.Popen(
                    command, env=node_env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
            started.append(RayNode(name, ip, process, log))
            if index == 0:
                _wait_for_head(address, env, started[0])
        cluster = RayCluster(address, {**env, "RAY_ADDRESS": address}, tuple(started))
        alive = [node for node in cluster.state(wait_for_nodes=len(names))["nodes"] if node["alive"]]
        assert len(alive) == len(names), alive
        yield cluster
    finally:
        for node in reversed(started):
            stop_session(node.process.pid, grace_s=15)
            node.process.wait(timeout=30)
        shutil.rmtree(temp_root, ignore_errors=True)


def _wait_for_head(address: str, env: dict[str, str], head: RayNode, timeout_s: float = 180) -> None:
    """Poll `ray status` until the head answers."""
    deadline = time.monotonic() + timeout_s
    status = [str(VENV_BIN / "ray"), "status", "--address", address]
    while subprocess.run(status, env=env, capture_output=True, timeout=60, check=False).returncode != 0:
        assert head.process.poll() is None, f"the Ray head exited:\n{head.log.read_text()[-4000:]}"
        assert time.monotonic() < deadline, f"the Ray head did not answer within {timeout_s} s"
        time.sleep(2)


def _read_state(address: str, nodes: int, timeout_s: float) -> dict[str, Any]:
    """Join the cluster as a driver, wait for `nodes` live nodes, and return its nodes and actors."""
    import ray

    ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    try:
        deadline = time.monotonic() + timeout_s
        while sum(node["Alive"] for node in ray.nodes()) < nodes and time.monotonic() < deadline:
            time.sleep(1)
        node_rows = [
            {"id": node["NodeID"], "ip": node["NodeManagerAddress"], "alive": node["Alive"],
             "resources": node["Resources"]}
            for node in ray.nodes()
        ]  # fmt: skip
        # The GCS keeps finished jobs' actors too; no public API lists them without Ray's dashboard.
        actor_rows = [
            {"name": actor["Name"], "class": actor["ActorClassName"], "node": actor["Address"]["NodeID"],
             "state": actor["State"], "job": actor["JobID"]}
            for actor in ray._private.state.actors().values()
        ]  # fmt: skip
        return {"nodes": node_rows, "actors": actor_rows}
    finally:
        ray.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Print a Ray cluster's nodes and actors as JSON.")
    parser.add_argument("address")
    parser.add_argument("--nodes", type=int, default=0, help="wait for this many live nodes first")
    parser.add_argument("--timeout", type=float, default=180)
    arguments = parser.parse_args()
    print(json.dumps(_read_state(arguments.address, arguments.nodes, arguments.timeout)))
