"""Compose medplay's Hydra config: configs/medplay.yaml, a hardware profile and the run's overrides.

`medplay train`, `medplay sft`, `medplay probe` and `medplay config get` all read the config this module composes;
composing it imports neither verl nor torch (tests/launcher/config/test_compose_imports.py). Checking it is
`verl_keys.check_config`'s job, deriving the run's values from it `run_plan.py`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict

from medical_team.common.errors import UserInputError
from medical_team.configs import PROFILE_GROUP, available_profiles

CONFIG_MODULE = "medical_team.configs"
CONFIG_NAME = "medplay"
# Config keys holding local paths; made absolute so every Ray worker reads the same files.
_PATH_KEYS = ("medplay.output_dir", "medplay.data_dir")


# Overrides Hydra itself must check: a config group's choice, the SFT section (which no later check reads), Hydra's.
_HYDRA_CHECKED = (PROFILE_GROUP, "sft", "hydra")


def medplay_overrides(overrides: Sequence[str]) -> list[str]:
    """The overrides as `++KEY=V` (add or set), but for groups, `sft.` and `hydra.` keys and `~KEY` (delete).

    Hydra stops at the first key a plain `KEY=V` names that the config lacks, and refuses `+KEY=V` for one it
    has (every key of `medplay:` is in configs/medplay.yaml). The checks after composition see every key
    (`verl_keys.check_config`: a key verl does not define, with the closest one; the `medplay:` schema), so a
    run's mistakes are all named at once.
    """
    return [item if _hydra_checked(item) else "++" + item.lstrip("+") for item in overrides]


def named_keys(overrides: Sequence[str]) -> frozenset[str]:
    """The config keys the overrides set (`KEY=V`, `+KEY=V`, `++KEY=V`): what the run plan leaves as the run gives it."""
    return frozenset(
        item.split("=", 1)[0].lstrip("+") for item in overrides if "=" in item and not item.startswith("~")
    )


def _hydra_checked(override: str) -> bool:
    """True for an override left as written: `~KEY`, a group choice, an `sft.`/`hydra.` key."""
    key = override.split("=", 1)[0].lstrip("+")
    return override.startswith("~") or "=" not in override or key.split(".", 1)[0] in _HYDRA_CHECKED


def compose_raw(overrides: Sequence[str]) -> DictConfig:
    """configs/medplay.yaml with these Hydra overrides applied, paths and interpolations as written."""
    from hydra import compose, initialize_config_module
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        with initialize_config_module(config_module=CONFIG_MODULE, version_base=None):
            return compose(config_name=CONFIG_NAME, overrides=medplay_overrides(overrides))
    except (HydraException, OmegaConfBaseException) as error:
        raise UserInputError(f"{error} (profiles: {', '.join(available_profiles())})", field="overrides") from error


def compose_config(overrides: Sequence[str]) -> DictConfig:
    """The config a run uses for these overrides (e.g. `profile=24g`): local paths absolute, all resolved."""
    config = compose_raw(overrides)
    for key in _PATH_KEYS:
        value = OmegaConf.select(config, key)
        OmegaConf.update(config, key, str(Path(value).expanduser().resolve()))
    model_path = Path(config.medplay.model.path).expanduser()
    if config.medplay.model.build_tiny or model_path.exists():
        config.medplay.model.path = str(model_path.resolve())
    # verl rebuilds parts of the config (e.g. Ray's runtime_env) outside this tree: resolve interpolations now.
    OmegaConf.resolve(config)
    use_cache_folder(config)
    environment_as_text(config)
    return config


def use_cache_folder(config: DictConfig) -> None:
    """Resolve `medplay.cache_dir` and point vLLM's, torch.compile's and Triton's caches there in every process."""
    from medical_team.caches.cache_folder import cache_dir, cache_environment

    folder = cache_dir(config.medplay.get("cache_dir"))
    with open_dict(config):
        config.medplay.cache_dir = str(folder)
        env_vars = config.ray_kwargs.ray_init.runtime_env.env_vars
        for variable, value in cache_environment(folder).items():
            env_vars.setdefault(variable, value)  # an explicit env_vars entry wins


def environment_as_text(config: DictConfig) -> None:
    """Make every value of the run's environment text, as Ray requires: Hydra reads `...env_vars.X=1` as a number."""
    env_vars = config.ray_kwargs.ray_init.runtime_env.env_vars
    with open_dict(config):
        for variable, value in list(env_vars.items()):
            env_vars[variable] = str(value)
