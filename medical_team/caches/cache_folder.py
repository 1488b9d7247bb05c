"""One folder for the compilation caches of vLLM, torch.compile (TorchInductor) and Triton, kept between runs.

A second start then reuses vLLM's compiled graphs and the kernels Triton built, instead of compiling
them again (about two minutes of the rollout server's start on an H100, docs/benchmarks.md). The
folder is `medplay.cache_dir`; null means $MEDPLAY_CACHE_DIR (the appliance's `/cache` volume), else
~/.cache/medplay. Each library is pointed at its own subfolder through its own environment variable. The
judge's vLLM server, a second engine that compiles while the rollout's does, gets a tree of its own
(`judge-server/`), so the two never build into one folder at once.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "MEDPLAY_CACHE_DIR"
DEFAULT_CACHE_DIR = "~/.cache/medplay"
# Each library's own variable for its cache root -> the subfolder it gets.
CACHE_VARIABLES = {
    "VLLM_CACHE_ROOT": "vllm",  # vLLM: torch.compile artefacts (torch_compile_cache/), CUDA graph metadata
    "TORCHINDUCTOR_CACHE_DIR": "torchinductor",  # torch.compile's FX graph and kernel caches (FSDP workers)
    "TRITON_CACHE_DIR": "triton",  # Triton's compiled kernels
}
# The judge's vLLM server's caches, under the cache folder.
JUDGE_SERVER_SUBFOLDER = "judge-server"
# Below this much free space the probe says the caches may not be kept.
MIN_CACHE_FREE_GIB = 5.0


def cache_dir(setting: str | None = None) -> Path:
    """The cache folder: the setting, else $MEDPLAY_CACHE_DIR, else ~/.cache/medplay (absolute)."""
    chosen = setting or os.environ.get(CACHE_ENV) or DEFAULT_CACHE_DIR
    return Path(chosen).expanduser().resolve()


def cache_environment(folder: Path) -> dict[str, str]:
    """The environment variables that put every library's cache under `folder`."""
    return {variable: str(folder / sub) for variable, sub in CACHE_VARIABLES.items()}


def judge_server_cache_environment(folder: Path) -> dict[str, str]:
    """The same variables for the judge's vLLM server: its own tree under `folder`."""
    return cache_environment(folder / JUDGE_SERVER_SUBFOLDER)
