"""medplay's Hydra configs: medplay.yaml (the commented defaults), profile/ and sft/.

Importing the package registers the resolver that medplay.yaml's Hydra search path names, `medplay_verl_configs`:
the folder of verl's own configs (`ppo_trainer` and its groups) in the installed verl package, found without
importing verl. Hydra's `pkg://verl.trainer.config` would import it, and with it torch (4 s of a `medplay config
get` on the project's CPU machine; docs/benchmarks.md). `medplay_reward_workers` gives a profile one reward
worker when the run needs one and none otherwise (the launcher resolves the config before Ray ships it).
"""

from __future__ import annotations

import importlib.resources
import importlib.util
from functools import cache
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from medical_team.common.vocab import SELFPLAY_AGENT

PROFILE_GROUP = "profile"  # configs/profile/NAME.yaml, chosen with `profile=NAME`
VERL_CONFIGS_RESOLVER = "medplay_verl_configs"


def verl_config_dir() -> str:
    """verl's own Hydra config folder inside the installed verl package (verl itself is not imported)."""
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("verl is not installed: medplay's configs extend verl's own")
    return str(Path(next(iter(spec.submodule_search_locations))) / "trainer" / "config")


REWARD_WORKERS_RESOLVER = "medplay_reward_workers"


def reward_workers(test_freq: int, val_before_train: bool, agent_loop: str) -> int:
    """verl's reward workers a run needs: one when it validates or trains with another agent loop than self-play.

    medplay's self-play loop scores its games itself, so its training needs no reward worker; validation (the
    assessor loop) is scored by them, and so is every row of verl's own agent loops (`single_turn_agent`: `make
    bench`'s stock step), which fail at their first step without one.
    """
    return 1 if int(test_freq) > 0 or bool(val_before_train) or agent_loop != SELFPLAY_AGENT else 0


if not OmegaConf.has_resolver(VERL_CONFIGS_RESOLVER):
    OmegaConf.register_new_resolver(VERL_CONFIGS_RESOLVER, verl_config_dir)
if not OmegaConf.has_resolver(REWARD_WORKERS_RESOLVER):
    OmegaConf.register_new_resolver(REWARD_WORKERS_RESOLVER, reward_workers)


def available_profiles() -> list[str]:
    """Names of the hardware profiles shipped in configs/profile/."""
    folder = importlib.resources.files(__name__) / PROFILE_GROUP
    return sorted(entry.name.removesuffix(".yaml") for entry in folder.iterdir() if entry.name.endswith(".yaml"))


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
