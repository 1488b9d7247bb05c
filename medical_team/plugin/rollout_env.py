"""Environment variables for the rollout engine's processes alone, through verl's platform hook `rollout_env_vars`.

A Ray worker's environment (`ray_kwargs.ray_init.runtime_env.env_vars`) reaches every process of a run: the FSDP
workers too. A setting meant for the rollout's vLLM server and the engine processes it starts goes there as
`MEDPLAY_ROLLOUT_ENV_<NAME>: value`; in every process verl imports medplay's plugin, `add_rollout_env` makes
verl's platform return `NAME: value` among the variables verl gives the vLLM server actor it launches
(`vllm_async_server.py`), whose engine processes inherit them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

ROLLOUT_ENV_PREFIX = "MEDPLAY_ROLLOUT_ENV_"
_ADDED = "_medplay_rollout_env"


def rollout_env_from(environ: Mapping[str, str]) -> dict[str, str]:
    """The rollout engine's own variables named in ENVIRON (`MEDPLAY_ROLLOUT_ENV_<NAME>` gives NAME)."""
    return {
        name.removeprefix(ROLLOUT_ENV_PREFIX): value
        for name, value in environ.items()
        if name.startswith(ROLLOUT_ENV_PREFIX) and len(name) > len(ROLLOUT_ENV_PREFIX)
    }


def add_rollout_env() -> dict[str, str]:
    """Make verl's platform hand the rollout's vLLM server this process's rollout variables; the variables added."""
    extra = rollout_env_from(os.environ)
    if not extra:
        return {}  # nothing to add: verl (and its platform detection) stays untouched
    from verl.plugin.platform import get_platform

    try:
        platform = get_platform()
    except ValueError:
        return {}  # the run's platform is not registered yet in this process (imported before medplay's cpu plugin)
    if getattr(platform, _ADDED, None) is not None:
        return extra  # already added in this process
    verls_own = platform.rollout_env_vars

    def with_medplays() -> dict[str, str]:
        return {**verls_own(), **extra}

    # An attribute of the one platform object verl keeps per process (its `rollout_env_vars` is the hook).
    platform.rollout_env_vars = with_medplays
    setattr(platform, _ADDED, extra)
    return extra
