"""The run's environment in this (driver) process: the config's variables, their warning filters, and what importing
verl would have set here, without importing verl.

The launcher used to import verl here, to load the modules `VERL_USE_EXTERNAL_MODULES` names (verl's own
import-time hook reads the variable before the config's environment was exported). Their effects belong to verl's
Ray processes, which load them as they import verl: the `cpu` platform and patches (plugin/cpu/), the card's cap, the
rollout's variables, the heap trim and the socket names (plugin/every_process.py). The launcher needed the `cpu`
platform only for verl's `auto_set_device`, which now runs in the task runner's process (task_runner/actor.py); what
it keeps of them is the CPU runtime's `vllm` version lookup, which a cpu-smoke run's versions.json records.
`import verl` costs a process 4-5 CPU seconds (torch, `torch._dynamo` through tensordict, transformers).
"""

from __future__ import annotations

import importlib
import logging
import os
import sys

from omegaconf import DictConfig, OmegaConf

from medical_team.run.vllm_cpu import CPU_PLUGIN, patch_vllm_version_lookup

# verl's arguments of `ray.init`: a private cluster's resources and settings, and the run's environment.
RAY_INIT = "ray_kwargs.ray_init"
ENV_VARS_KEY = f"{RAY_INIT}.runtime_env.env_vars"
EXTERNAL_MODULES_ENV = "VERL_USE_EXTERNAL_MODULES"
# What `import verl` sets in a process (verl/__init__.py): Ray's `uv run` runtime-env hook off unless set (verl passes
# `working_dir=None`, which the hook cannot take), and the root logger's format and level
# (verl/utils/logging_utils.py, `set_basic_config(level=logging.WARNING)`).
RAY_UV_HOOK_ENV = "RAY_ENABLE_UV_RUN_RUNTIME_ENV"
VERL_LOG_FORMAT = "%(levelname)s:%(asctime)s:%(message)s"
VERL_LOG_LEVEL = logging.WARNING


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


def apply_verl_import_defaults() -> None:
    """Set in this process what importing verl sets: Ray's uv hook off unless set, verl's root log format and level."""
    os.environ.setdefault(RAY_UV_HOOK_ENV, "0")
    logging.basicConfig(format=VERL_LOG_FORMAT, level=VERL_LOG_LEVEL)


def apply_environment(env: dict[str, str]) -> None:
    """Export the config's environment in this (driver) process, with what importing verl would set; load the verl
    external modules it names only where verl is imported already (verl's own import loads them otherwise)."""
    os.environ.update(env)
    apply_warning_filters(env.get("PYTHONWARNINGS", ""))
    apply_verl_import_defaults()
    modules = [name for name in env.get(EXTERNAL_MODULES_ENV, "").split(",") if name]
    if "verl" in sys.modules:
        # verl's import-time hook read the variable before it was set here: load them as it would have.
        for name in modules:
            importlib.import_module(name)
    elif CPU_PLUGIN in modules:
        patch_vllm_version_lookup()
