"""vLLM's compiled graphs kept between runs: the cache folder claimed by one run at a time, and what it holds.

verl 0.9.1 starts every engine with `VLLM_DISABLE_COMPILE_CACHE=1` (verl/trainer/constants_ppo.py) because
two engines writing one cache folder at once can corrupt it; a second `medplay train` then compiles again
(Dynamo and Inductor: 37 s of the rollout server's start on the H200, docs/benchmarks.md). medplay gives each
engine a tree of its own (medical_team/caches/cache_folder.py: the rollout's, the judge server's), so what remains is two
runs sharing one cache volume. The run that takes the folder's lock (a kernel `flock`, dropped when its process
exits) turns vLLM's cache on; a run that finds it taken compiles without it and says why. A value set for
`VLLM_DISABLE_COMPILE_CACHE` in the run's `ray_kwargs.ray_init.runtime_env.env_vars` is left as it is.
"""

from __future__ import annotations

import errno
import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

from medical_team.caches.cache_folder import CACHE_VARIABLES

COMPILE_CACHE_ENV = "VLLM_DISABLE_COMPILE_CACHE"
LOCK_NAME = "compile.lock"
# vLLM's compiled artefacts under its cache root: one folder per hash of (vLLM, model, settings), AOT ones apart.
COMPILED_FOLDER = "torch_compile_cache"
AOT_FOLDER = "torch_aot_compile"

# The descriptor that holds a cache folder's lock, per folder, for this process's lifetime.
_held: dict[Path, int] = {}


@dataclass(frozen=True)
class CompileCacheUse:
    """Whether this run keeps and reuses compiled graphs, the variable that says so to vLLM, and the console line."""

    kept: bool
    line: str

    def environment(self) -> dict[str, str]:
        """`VLLM_DISABLE_COMPILE_CACHE` for the driver, its Ray workers and the judge's server."""
        return {COMPILE_CACHE_ENV: "0" if self.kept else "1"}


def compiled_entries(folder: Path) -> int:
    """How many compiled-graph sets vLLM's caches under the cache folder hold (each engine's tree counted)."""
    vllm_root = CACHE_VARIABLES["VLLM_CACHE_ROOT"]
    roots = [path / COMPILED_FOLDER for path in folder.rglob(vllm_root) if path.is_dir()]
    graphs = [entry for root in roots if root.is_dir() for entry in root.iterdir() if entry.name != AOT_FOLDER]
    aot = [entry for root in roots for entry in (root / AOT_FOLDER).glob("*") if entry.is_dir()]
    return len(graphs) + len(aot)


def claim_compile_cache(folder: Path, set_by_run: str | None = None) -> CompileCacheUse:
    """Lock the cache folder for this run when no other run holds it, and say what vLLM will do with it.

    `set_by_run`: the run's own `VLLM_DISABLE_COMPILE_CACHE`, if its settings give one: then it decides, unlocked.
    """
    if set_by_run is not None:
        kept = set_by_run.strip() in ("", "0")  # vLLM reads the variable as an integer
        return CompileCacheUse(
            kept=kept, line=f"compile cache: {COMPILE_CACHE_ENV}={set_by_run} as the run's settings say"
        )
    if folder in _held:
        return _kept(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        os.close(fd)
        if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise
        return CompileCacheUse(
            kept=False,
            line=f"compile cache: another run is using {folder}; this run compiles without it "
            "(vLLM's cache does not take two writers at once)",
        )
    _held[folder] = fd
    return _kept(folder)


def release_compile_cache(folder: Path) -> None:
    """Let go of the cache folder's lock if this process holds it."""
    fd = _held.pop(folder, None)
    if fd is not None:
        os.close(fd)


def _kept(folder: Path) -> CompileCacheUse:
    entries = compiled_entries(folder)
    if entries:
        found = (
            f"{entries} compiled graph set{'s' if entries > 1 else ''} from earlier runs; vLLM reuses those that match"
        )
    else:
        found = "empty; this run's compiled graphs are kept there for the next"
    return CompileCacheUse(kept=True, line=f"compile cache: {folder} ({found})")
