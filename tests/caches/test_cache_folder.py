"""The compilation caches' folder (medical_team/caches/cache_folder.py) and how `medplay train` hands it to every process."""

from __future__ import annotations

from pathlib import Path

from medical_team.caches.cache_folder import CACHE_VARIABLES, cache_dir
from medical_team.launcher.config.compose import compose_config


def test_the_setting_wins_then_the_environment_then_the_home_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("MEDPLAY_CACHE_DIR", str(tmp_path / "volume"))
    assert cache_dir(str(tmp_path / "set")) == tmp_path / "set"
    assert cache_dir(None) == tmp_path / "volume"
    monkeypatch.delenv("MEDPLAY_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir(None) == tmp_path / "home" / ".cache" / "medplay"


def test_every_process_of_a_run_gets_each_librarys_cache_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("MEDPLAY_CACHE_DIR", str(tmp_path / "cache"))
    config = compose_config(["profile=80g"])
    env_vars = config.ray_kwargs.ray_init.runtime_env.env_vars
    assert config.medplay.cache_dir == str(tmp_path / "cache")
    assert {name: env_vars[name] for name in CACHE_VARIABLES} == {
        "VLLM_CACHE_ROOT": str(tmp_path / "cache" / "vllm"),
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache" / "torchinductor"),
        "TRITON_CACHE_DIR": str(tmp_path / "cache" / "triton"),
    }


def test_an_explicit_library_variable_is_kept(tmp_path):
    config = compose_config(
        [
            f"medplay.cache_dir={tmp_path}",
            f"+ray_kwargs.ray_init.runtime_env.env_vars.TRITON_CACHE_DIR={tmp_path / 'own'}",
        ]
    )
    env_vars = config.ray_kwargs.ray_init.runtime_env.env_vars
    assert env_vars["TRITON_CACHE_DIR"] == str(tmp_path / "own")
    assert env_vars["VLLM_CACHE_ROOT"] == str(Path(tmp_path) / "vllm")


def test_a_variable_given_as_a_number_reaches_ray_as_text(tmp_path):
    # Ray refuses a runtime environment whose values are not strings (TypeError at `ray.init`).
    config = compose_config([f"medplay.cache_dir={tmp_path}", "+ray_kwargs.ray_init.runtime_env.env_vars.MY_FLAG=1"])
    env_vars = config.ray_kwargs.ray_init.runtime_env.env_vars
    assert env_vars["MY_FLAG"] == "1"
    assert all(isinstance(value, str) for value in env_vars.values())
