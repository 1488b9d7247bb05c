"""The rollout engine's own variables reach verl's vLLM server through the platform hook, and only it."""

from __future__ import annotations

import os
import subprocess
import sys

from medical_team.plugin.rollout_env import ROLLOUT_ENV_PREFIX, rollout_env_from

PLUGINS = "medical_team.plugin.cpu,medical_team.plugin.every_process"
PLATFORM_ENV = """
import verl
from verl.plugin.platform import get_platform
print(sorted(get_platform().rollout_env_vars().items()))
"""


def platform_rollout_env(extra_env: dict[str, str]) -> str:
    """What verl's platform gives the rollout's vLLM server in a fresh process that imported medplay's plugin."""
    env = {
        name: value for name, value in os.environ.items() if not name.startswith(ROLLOUT_ENV_PREFIX)
    } | {"VERL_USE_EXTERNAL_MODULES": PLUGINS, "VERL_PLATFORM": "cpu", **extra_env}
    result = subprocess.run([sys.executable, "-c", PLATFORM_ENV], env=env, capture_output=True, text=True, check=True)
    return result.stdout.strip().splitlines()[-1]


def test_prefixed_names_give_the_rollouts_variables_and_nothing_else() -> None:
    environ = {
        "MEDPLAY_ROLLOUT_ENV_MALLOC_MMAP_THRESHOLD_": "131072",
        "MEDPLAY_ROLLOUT_ENV_": "no name",
        "MALLOC_ARENA_MAX": "2",
        "MEDPLAY_OTHER": "x",
    }
    assert rollout_env_from(environ) == {"MALLOC_MMAP_THRESHOLD_": "131072"}


def test_the_plugin_adds_them_to_what_verls_platform_gives_the_rollout() -> None:
    added = platform_rollout_env({"MEDPLAY_ROLLOUT_ENV_MALLOC_MMAP_THRESHOLD_": "131072"})
    assert added == "[('MALLOC_MMAP_THRESHOLD_', '131072')]"
    assert platform_rollout_env({}) == "[]"

