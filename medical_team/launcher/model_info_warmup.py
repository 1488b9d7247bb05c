"""vLLM's inspection of the policy's model class, done in the background while verl's trainer starts.

On a cache folder it has not seen, a vLLM engine inspects the model's class in a throwaway subprocess that
imports torch and vLLM once more, and keeps the answer in `$VLLM_CACHE_ROOT/modelinfos/` (16 s of the
rollout server's start on the H200, 14 s on 2 CPU cores: docs/benchmarks.md). The rollout server starts a minute
into `medplay train`; `model_info_warmed` has the same inspection done before that, in a process started with the
run and pointed at the rollout's cache folder (unless that folder has the answer already), so the rollout server
reads the answer from there. Best effort: if the warm-up fails or has not finished, vLLM inspects the class
itself, as it would have anyway.

Run as `python -m medical_team.launcher.model_info_warmup MODEL_FOLDER`: vLLM's own model config of the folder,
whose construction runs (and caches) the inspection.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STOP_WAIT_S = 5.0
# vLLM's cache of inspections: one `<module>-<class>.json` per model class under its cache root.
MODEL_INFO_FOLDER = "modelinfos"
DEFAULT_VLLM_CACHE_ROOT = "~/.cache/vllm"  # vLLM's own default when $VLLM_CACHE_ROOT is unset


def inspected_before(model: Path) -> bool:
    """True when vLLM's cache folder already holds an inspection of each of the model's architectures."""
    architectures = json.loads((model / "config.json").read_text()).get("architectures") or []
    folder = Path(os.environ.get("VLLM_CACHE_ROOT", DEFAULT_VLLM_CACHE_ROOT)).expanduser() / MODEL_INFO_FOLDER
    return bool(architectures) and all(any(folder.glob(f"*-{name}.json")) for name in architectures)


def warmup_command(model: Path) -> list[str]:
    """The command that has vLLM inspect `model`'s class into the cache folder its environment names."""
    return [sys.executable, "-m", __name__, str(model)]


@contextmanager
def model_info_warmed(model: Path, log_file: Path) -> Iterator[subprocess.Popen[bytes] | None]:
    """Inspect a local model folder's class in the background for the block; stop the inspection if still running.

    Yields the warm-up's process (its output appended to `log_file`), or None for a model that is not a local
    folder (a hub id: vLLM resolves it itself) or whose classes the cache folder holds already (a warm-up would
    only import vLLM for nothing, beside the trainer's start). The process inherits this one's environment, whose
    `VLLM_CACHE_ROOT` is the rollout's (medical_team.caches.cache_folder).
    """
    if not (model / "config.json").is_file() or inspected_before(model):
        yield None
        return
    with open(log_file, "ab") as log:
        process = subprocess.Popen(warmup_command(model), stdout=log, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=STOP_WAIT_S)


def main() -> None:
    """Build vLLM's model config of the folder given on the command line (its class inspection is cached)."""
    from vllm.config import ModelConfig

    ModelConfig(model=sys.argv[1])


if __name__ == "__main__":
    main()
