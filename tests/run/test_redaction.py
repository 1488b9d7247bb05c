"""Secret-named settings are redacted in what a run writes down; no setting of the shipped config is taken for one."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from medical_team.launcher.config.compose import compose_config
from medical_team.launcher.preparation import save_config
from medical_team.run.redaction import REDACTED, is_secret_name, redacted, redacted_overrides

SECRET_NAMES = ["WANDB_API_KEY", "HF_TOKEN", "medplay.judge.api_key", "db-password", "aws.secret_access_key", "token"]
PLAIN_NAMES = ["data.prompt_key", "max_tokens", "ppo_max_token_len_per_gpu", "profile_token_end", "tokenizer", "key"]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", PLAIN_NAMES)
def test_plain_names(name: str) -> None:
    assert not is_secret_name(name)


def test_no_setting_of_the_shipped_profiles_is_redacted() -> None:
    for profile in ("cpu-smoke", "80g"):
        config = OmegaConf.to_container(compose_config([f"profile={profile}"]))
        assert redacted(config) == config


def test_the_saved_config_and_the_overrides_hide_the_secret(tmp_path) -> None:
    secret = "sk-live-0123456789"
    override = f"+ray_kwargs.ray_init.runtime_env.env_vars.WANDB_API_KEY={secret}"
    config = compose_config(["profile=cpu-smoke", override])
    assert config.ray_kwargs.ray_init.runtime_env.env_vars.WANDB_API_KEY == secret  # the run still gets it
    save_config(config, tmp_path / "config.yaml")
    text = (tmp_path / "config.yaml").read_text()
    assert secret not in text and f"WANDB_API_KEY: {REDACTED}" in text
    assert OmegaConf.load(tmp_path / "config.yaml").data.prompt_key == "prompt"
    assert redacted_overrides(["profile=cpu-smoke", override]) == [
        "profile=cpu-smoke",
        f"+ray_kwargs.ray_init.runtime_env.env_vars.WANDB_API_KEY={REDACTED}",
    ]
