"""The verl release medplay's verl integration was written for, checked where a process is about to run verl.

medplay replaces a few verl and vLLM internals (docs/verl-integration.md lists them); in another verl release they
may have moved, and a silent mismatch fails far from its cause. The launcher checks before Ray starts
(`launcher.config.verl_keys.check_config`, `medplay sft`'s trainer), every verl process as it imports medplay's plugin
(medical_team/plugin/__init__.py). The check reads the installed version from package metadata, without importing
verl.
"""

from __future__ import annotations

import importlib.metadata
import os

VERL_VERSION = "0.9.1"  # also pinned in pyproject.toml, requirements/cpu.lock and docker/requirements-gpu.lock
# Set to 1 to run with another verl anyway, e.g. while porting the patches to it.
ALLOW_OTHER_VERL_ENV = "MEDPLAY_ALLOW_OTHER_VERL"


class VerlVersionError(ImportError):
    """The installed verl is not the release medplay's verl integration was written for."""


def check_verl_version(installed: str | None = None) -> None:
    """Raise VerlVersionError unless verl VERL_VERSION is installed (or MEDPLAY_ALLOW_OTHER_VERL=1)."""
    if installed is None:
        try:
            installed = importlib.metadata.version("verl")
        except importlib.metadata.PackageNotFoundError:
            return  # no verl at all: the first verl import names the problem itself
    if installed == VERL_VERSION or os.environ.get(ALLOW_OTHER_VERL_ENV) == "1":
        return
    raise VerlVersionError(
        f"medplay's verl integration was written for verl {VERL_VERSION}, but verl {installed} is installed: "
        f"it replaces verl internals that may have moved (docs/verl-integration.md). Install verl=={VERL_VERSION} "
        f"(requirements/cpu.lock, docker/requirements-gpu.lock), or set {ALLOW_OTHER_VERL_ENV}=1 to run anyway "
        "after re-checking every patch listed there."
    )
