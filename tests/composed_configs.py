"""verl's `ppo_trainer` config composed with medplay's section, for tests that need the trainer's config."""

from __future__ import annotations

import copy
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from medical_team.configs import packaged_section

# configs/medplay.yaml's `medplay:` section, with the model-free judge.
MEDPLAY_SECTION: dict[str, Any] = copy.deepcopy(packaged_section())
MEDPLAY_SECTION["judge"]["backend"] = "rules"


def composed_config(overrides: list[str]) -> DictConfig:
    """verl's `ppo_trainer` config composed with `overrides`, and medplay's section."""
    from hydra import compose, initialize_config_module

    with initialize_config_module("verl.trainer.config", version_base=None):
        config = compose("ppo_trainer", overrides=overrides)
    with open_dict(config):
        config.medplay = OmegaConf.create(MEDPLAY_SECTION)
    return config
