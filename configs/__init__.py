"""medplay's Hydra configs: medplay.yaml (the commented defaults), profile/ and sft/."""

from __future__ import annotations

import importlib.resources
from functools import cache
from typing import Any

PROFILE_GROUP = "profile"  # configs/profile/NAME.yaml, chosen with `profile=NAME`


@cache
def packaged_section() -> dict[str, Any]:
    """medplay.yaml's `medplay:` section (no profile, no overrides) as plain, resolved values; do not mutate it."""
    from omegaconf import OmegaConf

    text = (importlib.resources.files(__name__) / "medplay.yaml").read_text()
    return OmegaConf.to_container(OmegaConf.create(text).medplay, resolve=True)


@cache
def profile_file(name: str) -> dict[str, Any]:
    """configs/profile/NAME.yaml as written (its own keys; not the defaults it names); do not mutate it."""
    from omegaconf import OmegaConf

    text = (importlib.resources.files(__name__) / PROFILE_GROUP / f"{name}.yaml").read_text()
    return OmegaConf.to_container(OmegaConf.create(text))
