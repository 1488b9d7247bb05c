"""CPU runtime for verl 0.9.1, loaded only by the `cpu-smoke` profile through VERL_USE_EXTERNAL_MODULES.

Importing this module registers the `cpu` platform (selected with VERL_PLATFORM=cpu) and installs the
patches of `patches.py`. verl imports it in the task runner and every Ray worker, and `medplay sft` in its own
process (the launcher, which imports no verl, installs only its `vllm` version lookup: medical_team/run/vllm_cpu.py).
"""

from medical_team.plugin.cpu import patches
from medical_team.plugin.cpu.platform import PLATFORM_NAME, PlatformCPU

patches.install()

__all__ = ["PLATFORM_NAME", "PlatformCPU"]
