"""The run's environment in this (driver) process: the config's variables, their warning filters, verl's modules."""

from __future__ import annotations

import os

from omegaconf import DictConfig, OmegaConf

# verl's arguments of `ray.init`: a private cluster's resources and settings, and the run's environment.
RAY_INIT = "ray_kwargs.ray_init"
ENV_VARS_KEY = f"{RAY_INIT}.runtime_env.env_vars"


def runtime_env_vars(config: DictConfig) -> dict[str, str]:
    """The environment the config asks for in the driver and every Ray worker."""
    env = OmegaConf.select(config, ENV_VARS_KEY, default=None) or {}
    return {str(key): str(value) for key, value in OmegaConf.to_container(env, resolve=True).items()}


def apply_warning_filters(spec: str) -> None:
    """Install the filters of a PYTHONWARNINGS value in this process (new processes read the variable themselves)."""
    import builtins
    import re
    import warnings

    for entry in filter(None, (item.strip() for item in spec.split(","))):
        action, message, category, module = (entry.split(":") + [""] * 4)[:4]
        found = getattr(builtins, category, None) if category else Warning
        if not (isinstance(found, type) and issubclass(found, Warning)):
            continue  # as Python does with an invalid -W option
        warnings.filterwarnings(
            action or "default",
            message=re.escape(message),
            category=found,
            module=rf"{re.escape(module)}\Z" if module else "",
        )


def apply_environment(env: dict[str, str]) -> None:
    """Export the config's environment in this (driver) process and load verl external modules it names."""
    os.environ.update(env)
    apply_warning_filters(env.get("PYTHONWARNINGS", ""))
    modules = env.get("VERL_USE_EXTERNAL_MODULES", "")
    if modules:
        # verl's own import-time hook reads the variable only if verl was not imported yet: import them here too.
        from verl.utils.import_utils import import_external_libs

        import_external_libs(modules.split(","))
