"""Fixtures for the appliance tests: the real entrypoint, supervisord and Ray, outside Docker, in temp dirs.

Every run gets its own checkpoints/data/logs folders, a short run dir (unix socket paths are limited),
free ports for Ray, and its own session, so whatever it leaves running can be found and stopped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from appliance_harness import ENTRYPOINT, REPO, VENV_BIN, free_ports, stop_session


@dataclass
class Appliance:
    """One appliance's folders and environment, and how to run its entrypoint."""

    root: Path
    run_dir: Path
    env: dict[str, str]

    @property
    def checkpoints(self) -> Path:
        """The folder mounted as /checkpoints."""
        return self.root / "checkpoints"

    @property
    def data(self) -> Path:
        """The folder mounted as /data."""
        return self.root / "data"

    @property
    def logs(self) -> Path:
        """The folder mounted as /logs."""
        return self.root / "logs"

    def run(self, *args: str, timeout: float = 840) -> subprocess.CompletedProcess[str]:
        """Run the entrypoint to completion in its own session; stop what it leaves behind."""
        process = subprocess.Popen(
            [str(ENTRYPOINT), *args],
            env=self.env,
            cwd=self.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop_session(process.pid)
            output, _ = process.communicate()
            pytest.fail(f"the entrypoint did not finish within {timeout} s:\n{output[-5000:]}")
        finally:
            stop_session(process.pid)
        return subprocess.CompletedProcess(process.args, process.returncode, output, None)

    def log(self, *parts: str) -> str:
        """A log file under the logs folder ('' when it does not exist)."""
        path = self.logs.joinpath(*parts)
        return path.read_text(errors="replace") if path.exists() else ""


@pytest.fixture
def appliance(tmp_path: Path) -> Iterator[Appliance]:
    """A fresh appliance environment with free Ray ports and the project's virtualenv first on PATH."""
    run_dir = Path(tempfile.mkdtemp(prefix="mp-", dir="/tmp"))
    ray_port, client_port, dashboard_port, agent_port = free_ports(4)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("RAY_", "MEDPLAY_", "PYTEST_", "VERL_", "VLLM_"))
    }
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        MEDPLAY_HOME=str(REPO),
        MEDPLAY_CHECKPOINTS=str(tmp_path / "checkpoints"),
        MEDPLAY_DATA=str(tmp_path / "data"),
        MEDPLAY_LOGS=str(tmp_path / "logs"),
        MEDPLAY_RUN_DIR=str(run_dir),
        MEDPLAY_RAY_PORT=str(ray_port),
        MEDPLAY_RAY_CLIENT_PORT=str(client_port),
        MEDPLAY_RAY_DASHBOARD_PORT=str(dashboard_port),
        MEDPLAY_RAY_AGENT_PORT=str(agent_port),
        MEDPLAY_RAY_DASHBOARD="false",
    )
    for folder in ("checkpoints", "data", "logs"):
        (tmp_path / folder).mkdir()
    yield Appliance(tmp_path, run_dir, env)
    shutil.rmtree(run_dir, ignore_errors=True)


@dataclass
class RayHead:
    """A Ray head started outside the appliance (an existing cluster to join)."""

    address: str
    env: dict[str, str]


@pytest.fixture
def external_ray_head(tmp_path: Path) -> Iterator[RayHead]:
    """A Ray head on free ports with token authentication, over-committed like the cpu-smoke profile."""
    port, client_port, dashboard_port, agent_port = free_ports(4)
    token = tmp_path / "ray-token"
    token.write_text(os.urandom(32).hex())
    env = {key: value for key, value in os.environ.items() if not key.startswith(("RAY_", "PYTEST_"))}
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
    env.update(auth, PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}", RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="5")
    command = [
        str(VENV_BIN / "ray"), "start", "--head", "--block", "--disable-usage-stats", "--node-ip-address=127.0.0.1",
        f"--port={port}", f"--ray-client-server-port={client_port}", "--include-dashboard=false",
        f"--dashboard-port={dashboard_port}", f"--dashboard-agent-listen-port={agent_port}",
        "--num-cpus=16", "--num-gpus=1",
    ]  # fmt: skip
    log = (tmp_path / "external-ray-head.log").open("w")
    head = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        status = [str(VENV_BIN / "ray"), "status", "--address", address]
        while subprocess.run(status, env=env, capture_output=True, timeout=60, check=False).returncode != 0:
            assert head.poll() is None, f"the Ray head exited: {(tmp_path / 'external-ray-head.log').read_text()}"
            assert time.monotonic() < deadline, "the Ray head did not come up within 180 s"
            time.sleep(2)
        yield RayHead(address, auth)
    finally:
        stop_session(head.pid)
        head.wait(timeout=30)
        log.close()
