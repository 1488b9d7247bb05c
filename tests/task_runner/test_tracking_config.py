"""wandb as a run writes to it: offline into the output folder by default, the config it records without secrets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from medical_team.common.errors import UserInputError
from medical_team.launcher.config.compose import compose_config
from medical_team.launcher.environment import runtime_env_vars
from medical_team.run.settings import settings_from_trainer_config

pytestmark = pytest.mark.slow

SECRET = "sk-wandb-test-51c0"

# verl's Tracking, as the trainer process builds it in `fit`, logging one step to wandb.
LOG_ONE_STEP = """
import json, sys
from verl.trainer.ppo.v1 import trainer_base
from medical_team.task_runner.tracking_config import use_redacting_tracking
use_redacting_tracking()
config = json.loads(open(sys.argv[1]).read())
tracker = trainer_base.Tracking("medplay", "selfplay", default_backend=["wandb"], config=config)
tracker.log({"assessor/accuracy": 0.5}, step=1)
tracker.logger["wandb"].finish()
"""


def test_an_offline_wandb_run_lands_in_the_output_folder_with_its_secrets_redacted(tmp_path: Path) -> None:
    override = f"+ray_kwargs.ray_init.runtime_env.env_vars.WANDB_API_KEY={SECRET}"
    config = compose_config(["profile=cpu-smoke", f"medplay.output_dir={tmp_path}", override])
    env = runtime_env_vars(config)
    assert (env["WANDB_MODE"], env["WANDB_DIR"]) == ("offline", str(tmp_path))
    resolved = tmp_path / "resolved.json"  # a file, not an argument: wandb records the process's arguments
    resolved.write_text(json.dumps(OmegaConf.to_container(config, resolve=True)))
    subprocess.run(
        [sys.executable, "-c", LOG_ONE_STEP, str(resolved)],
        env={**os.environ, **{k: v for k, v in env.items() if k.startswith("WANDB_")}},
        cwd=tmp_path,
        check=True,
        capture_output=True,
        timeout=300,
    )
    [run] = (tmp_path / "wandb").glob("offline-run-*")
    [records] = run.glob("run-*.wandb")  # what `wandb sync` would upload, the run's config among it
    written = records.read_bytes()
    assert b"WANDB_API_KEY" in written and b"<redacted>" in written
    assert not [p for p in run.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


def test_wandb_mode_online_is_passed_on_and_a_bad_mode_is_named() -> None:
    config = compose_config(["profile=cpu-smoke", "medplay.wandb_mode=online"])
    assert runtime_env_vars(config)["WANDB_MODE"] == "online"
    with pytest.raises(UserInputError, match="wandb_mode"):
        settings_from_trainer_config(compose_config(["profile=cpu-smoke", "medplay.wandb_mode=loud"]))
