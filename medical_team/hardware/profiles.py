"""The hardware profiles (configs/profile/NAME.yaml) as the probe reads them: what each needs of the machine.

Each profile file states its own needs in `medplay.hardware` (the VRAM it needs, the card its memory plan assumes
without a GPU; the disk a checkpoint takes is estimated from the composed config: checkpoint_size.py) over configs/medplay.yaml's (no GPU), as Hydra composes them;
nothing here repeats them. `HardwareSettings` is also the
schema of that section in a composed config (run/settings.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from medical_team.common.schema import above, at_least, bind
from medical_team.configs import available_profiles, packaged_section, profile_file


@dataclass(frozen=True)
class HardwareSettings:
    """`medplay.hardware`: what a hardware profile needs of the machine."""

    min_vram_gib: float = at_least(0, "a number of GiB")  # 0: no GPU (cpu-smoke)
    card_gib: float | None = above(0, "a number of GiB")  # None: no GPU


@dataclass(frozen=True)
class HardwareProfile:
    """A hardware profile of configs/: its name and what it needs (its file's `medplay.hardware`)."""

    name: str
    hardware: HardwareSettings

    @property
    def min_vram_gib(self) -> float:
        """The VRAM the profile needs."""
        return self.hardware.min_vram_gib

    @property
    def card_gib(self) -> float:
        """The card the memory plan assumes without a GPU (0.0 for cpu-smoke)."""
        return self.hardware.card_gib or 0.0

    @property
    def needs_gpu(self) -> bool:
        """True for every profile except the CPU smoke profile."""
        return self.min_vram_gib > 0


def load_profile(name: str) -> HardwareProfile:
    """configs/profile/NAME.yaml's needs over configs/medplay.yaml's (a UserInputError naming a wrong key)."""
    section = {**packaged_section()["hardware"], **profile_file(name).get("medplay", {}).get("hardware", {})}
    return HardwareProfile(name, bind(HardwareSettings, section, "medplay.hardware", f"configs/profile/{name}.yaml"))


@cache
def hardware_profiles() -> dict[str, HardwareProfile]:
    """Every shipped profile by name; do not mutate it."""
    return {name: load_profile(name) for name in available_profiles()}


def profile_for_vram(vram_gib: float | None) -> str | None:
    """The largest GPU profile this much VRAM holds; cpu-smoke without a GPU; None when even 24g does not fit."""
    if vram_gib is None:
        return "cpu-smoke"
    fitting = [p for p in hardware_profiles().values() if p.needs_gpu and p.min_vram_gib <= vram_gib]
    return max(fitting, key=lambda p: p.min_vram_gib).name if fitting else None
