"""The launcher's token counts before Ray (prompt lengths, the served judge's context) load no torch nor transformers
where the model folder allows the light tokenizer, and load transformers' tokenizer as before where it does not.

    .venv/bin/python -m pytest -q tests/launcher/plan/test_launcher_tokenizers.py
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf

from medical_team.data.medec import TEST_CSV, VALIDATION_CSV, bundled_csv
from medical_team.game.dataset import ConvertOptions, convert_medec
from medical_team.launcher.judge import judge_context
from medical_team.launcher.judge.judge_context import judge_tokenizer
from medical_team.launcher.plan.prompt_lengths import policy_tokenizer
from medical_team.models.light_tokenizer import LightTokenizer

# Both checks as `medplay train` runs them, in a fresh interpreter; then the frameworks it loaded, and its CPU time.
CHECKS = """
import json, sys, time
from omegaconf import OmegaConf
from medical_team.configs import packaged_section
from medical_team.launcher.judge.judge_context import check_judge_context
from medical_team.launcher.plan.prompt_lengths import check_prompt_lengths
from medical_team.run.settings import selfplay_settings

config = OmegaConf.create(json.loads(sys.argv[1]))
section = packaged_section()
serve = {**section["judge"]["serve"], "max_model_len": 100_000}
settings = selfplay_settings({**section, "judge": {**section["judge"], "model": sys.argv[2], "serve": serve}})
check_prompt_lengths(config, settings)
check_judge_context(config, settings)
print(json.dumps({"loaded": sorted(m for m in ("torch", "transformers") if m in sys.modules), "cpu_s": time.process_time()}))
"""


@pytest.fixture(scope="module")
def bundled_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    output = tmp_path_factory.mktemp("bundled")
    convert_medec([bundled_csv(VALIDATION_CSV)], bundled_csv(TEST_CSV), output, ConvertOptions())
    return output


def run_config(data: Path, model: Path, **model_keys: object) -> DictConfig:
    """The keys the checks read, as the cpu-smoke profile sets them."""
    return OmegaConf.create(
        {
            "data": {"train_files": str(data / "train.parquet"), "val_files": str(data / "val.parquet")},
            "actor_rollout_ref": {
                "model": {"path": str(model), **model_keys},
                "rollout": {"prompt_length": 1280, "response_length": 48},
            },
        }
    )


def test_the_checks_before_ray_load_neither_torch_nor_transformers(bundled_data, tiny_model_dir):
    config = json.dumps(OmegaConf.to_container(run_config(bundled_data, tiny_model_dir)))
    result = subprocess.run(
        [sys.executable, "-c", CHECKS, config, str(tiny_model_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.splitlines()[-1])["loaded"] == []


def test_the_policy_and_judge_tokenizers_are_light_where_the_folder_allows(bundled_data, tiny_model_dir):
    assert isinstance(policy_tokenizer(run_config(bundled_data, tiny_model_dir)), LightTokenizer)
    assert isinstance(judge_tokenizer(str(tiny_model_dir)), LightTokenizer)


def test_other_folders_get_transformers_tokenizer_as_before(bundled_data, tiny_model_dir, tmp_path, caplog):
    remote = run_config(bundled_data, tiny_model_dir, trust_remote_code=True)
    assert type(policy_tokenizer(remote)).__name__ == "TokenizersBackend"
    untemplated = tmp_path / "untemplated"
    shutil.copytree(tiny_model_dir, untemplated)
    (untemplated / "chat_template.jinja").unlink()
    assert type(policy_tokenizer(run_config(bundled_data, untemplated))).__name__ == "TokenizersBackend"
    assert type(judge_tokenizer(str(untemplated))).__name__ == "TokenizersBackend"
    # A judge folder whose tokenizer does not load leaves the context unchecked, with a warning. The logger's own
    # level: an earlier test's `import verl` may leave the root logger at ERROR.
    with caplog.at_level(logging.WARNING, logger=judge_context.__name__):
        assert judge_tokenizer(str(tmp_path / "absent")) is None
    assert "the judge's context is not checked: its tokenizer does not load" in caplog.text
