"""medplay's Hydra configs: medplay.yaml (the commented defaults), profile/ and sft/."""

from __future__ import annotations

import importlib.resources
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def packaged_section() -> dict[str, Any]:
    """medplay.yaml's `medplay:` section (no profile, no overrides) as plain, resolved values; do not mutate it."""
    from omegaconf import OmegaConf

    text = (importlib.resources.files(__name__) / "medplay.yaml").read_text()
    return OmegaConf.to_container(OmegaConf.create(text).medplay, resolve=True)
