"""The run's environment in the launcher (medical_team/launcher/environment.py): what importing verl set there, set
without verl; verl's external modules loaded only where verl is imported; the CPU runtime's `vllm` version kept.
"""

from __future__ import annotations

import ast
import importlib.metadata
import inspect
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import verl
from verl.utils import logging_utils

from medical_team.launcher import environment
from medical_team.run.vllm_cpu import CPU_PLUGIN

CPU_RUNTIME = f"{CPU_PLUGIN},medical_team.plugin.every_process"  # as configs/profile/cpu-smoke.yaml names them


def recorded_basic_config(monkeypatch: pytest.MonkeyPatch, call: Any) -> dict[str, Any]:
    """The keyword arguments `call` hands `logging.basicConfig`."""
    recorded: dict[str, Any] = {}
    monkeypatch.setattr(logging, "basicConfig", lambda **kwargs: recorded.update(kwargs))
    call()
    return recorded


def test_the_launcher_sets_what_importing_verl_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    """verl/__init__.py turns Ray's uv hook off unless set and calls `set_basic_config(level=logging.WARNING)`: the
    launcher sets the same variable and hands `logging.basicConfig` what verl's `set_basic_config` hands it."""
    statements = [ast.unparse(node) for node in ast.parse(inspect.getsource(verl)).body]
    assert f"os.environ.setdefault('{environment.RAY_UV_HOOK_ENV}', '0')" in statements
    assert "set_basic_config(level=logging.WARNING)" in statements
    verls = recorded_basic_config(monkeypatch, lambda: logging_utils.set_basic_config(level=logging.WARNING))
    monkeypatch.delenv(environment.RAY_UV_HOOK_ENV, raising=False)
    assert recorded_basic_config(monkeypatch, environment.apply_verl_import_defaults) == verls
    assert os.environ[environment.RAY_UV_HOOK_ENV] == "0"
    monkeypatch.setenv(environment.RAY_UV_HOOK_ENV, "1")
    environment.apply_verl_import_defaults()
    assert os.environ[environment.RAY_UV_HOOK_ENV] == "1"


def test_the_cpu_runtime_is_named_as_the_cpu_smoke_profile_names_it() -> None:
    from medical_team.launcher.config.compose import compose_config

    config = compose_config(["profile=cpu-smoke"])
    assert environment.runtime_env_vars(config)[environment.EXTERNAL_MODULES_ENV] == CPU_RUNTIME


def test_without_verl_the_launcher_loads_no_plugin_but_keeps_the_cpu_runtimes_vllm_version() -> None:
    """In a process without verl the plugin modules are left to verl's processes; the `vllm` version the CPU
    runtime gives (recorded in a cpu-smoke run's versions.json) is the same as when verl loaded the plugin here."""
    code = (
        "import importlib.metadata, json, sys\n"
        "from medical_team.launcher.environment import apply_environment\n"
        f"apply_environment({{'VERL_USE_EXTERNAL_MODULES': {CPU_RUNTIME!r}}})\n"
        "try:\n"
        "    vllm = importlib.metadata.version('vllm')\n"
        "except importlib.metadata.PackageNotFoundError:\n"
        "    vllm = None\n"
        "heavy = ('verl', 'torch', 'transformers', 'medical_team.plugin')\n"
        "print(json.dumps({'loaded': [m for m in heavy if m in sys.modules], 'vllm': vllm}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    launcher = result.stdout.strip().splitlines()[-1]
    from medical_team.plugin.cpu.patches import patch_vllm_version_lookup

    patch_vllm_version_lookup()  # as the plugin does in every verl process (and did in the launcher)
    assert launcher == f'{{"loaded": [], "vllm": "{importlib.metadata.version("vllm")}"}}'


def test_where_verl_is_imported_the_named_modules_are_loaded_here(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """verl's own hook read `VERL_USE_EXTERNAL_MODULES` before the config set it: the launcher loads them itself."""
    (tmp_path / "medplay_test_plugin.py").write_text("LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(os, "environ", dict(os.environ))  # apply_environment exports into this copy
    monkeypatch.setattr(logging, "basicConfig", lambda **kwargs: None)
    monkeypatch.delitem(sys.modules, "medplay_test_plugin", raising=False)
    assert "verl" in sys.modules
    environment.apply_environment({environment.EXTERNAL_MODULES_ENV: "medplay_test_plugin"})
    assert sys.modules["medplay_test_plugin"].LOADED
