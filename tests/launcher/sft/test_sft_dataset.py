"""medplay's verl SFT dataset and config: prompts tokenized exactly as the game's agent loop does, the target trained.

.venv/bin/python -m pytest -q tests/launcher/sft/test_sft_dataset.py
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from medical_team.data.medec import TEST_CSV, VALIDATION_CSV, bundled_csv
from medical_team.data.sft_parquet import read_sft_parquet
from medical_team.game.cot import parse_response
from medical_team.game.dataset import ConvertOptions, convert_medec
from medical_team.game.prompts import with_thinking_prefix
from medical_team.launcher.config.compose import available_profiles
from medical_team.launcher.sft.sft import compose_sft_config, sft_option
from medical_team.launcher.sft.sft_dataset import GamePromptSFTDataset, fit_length


@pytest.fixture(scope="module")
def sft_val(tmp_path_factory) -> Path:
    """sft_val.parquet of the bundled data."""
    output = tmp_path_factory.mktemp("sft-data")
    convert_medec([bundled_csv(VALIDATION_CSV)], bundled_csv(TEST_CSV), output, ConvertOptions())
    return output / "sft_val.parquet"


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


def agent_loop_prompt_ids(tokenizer, messages) -> list[int]:
    """What `agent_loop.agent_loop._TurnPlayer._prompt_ids` sends to the rollout (before length capping)."""
    rendered = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return tokenizer.encode(with_thinking_prefix(rendered), add_special_tokens=False)


def test_prompt_is_the_game_prompt_and_only_the_target_is_trained(sft_val, tokenizer):
    rows = read_sft_parquet(sft_val)
    dataset = GamePromptSFTDataset(str(sft_val), tokenizer, OmegaConf.create({"max_length": 4096}))
    assert len(dataset) == len(rows)
    for row, index in zip(rows, range(len(rows))):
        item = dataset[index]
        prompt = agent_loop_prompt_ids(tokenizer, row["prompt"])
        ids, mask = item["input_ids"].tolist(), item["loss_mask"].tolist()
        assert ids[: len(prompt)] == prompt
        assert mask == [0] * len(prompt) + [1] * (len(ids) - len(prompt))
        assert item["position_ids"].tolist() == list(range(len(ids)))
        target = ids[len(prompt) :]
        assert target[-1] == tokenizer.eos_token_id
        text = tokenizer.decode(target[:-1])
        assert text == row["response"] and parse_response(text).compliant


def test_max_samples_and_truncation_keep_the_target(sft_val, tokenizer):
    dataset = GamePromptSFTDataset([str(sft_val)], tokenizer, OmegaConf.create({"max_length": 300}), max_samples=5)
    assert len(dataset) == 5
    for index in range(5):
        item = dataset[index]
        assert len(item["input_ids"]) <= 300
    assert fit_length(list(range(10)), [100, 101], 5) == ([7, 8, 9], [100, 101])
    assert fit_length([1, 2], [5, 6, 7, 8], 3) == ([], [5, 6, 7])


@pytest.mark.parametrize("profile", available_profiles())
def test_sft_config_composes_for_every_profile_from_the_training_tree(profile, tmp_path):
    config = compose_sft_config([f"profile={profile}", f"medplay.data_dir={tmp_path}"])
    sft = config.sft
    assert sft.model == config.actor_rollout_ref.model
    assert sft.engine.strategy == config.actor_rollout_ref.actor.strategy == "fsdp2"
    assert sft.trainer.device == config.trainer.device
    assert sft.data.train_files == f"{tmp_path}/sft_train.parquet"
    assert sft.data.val_files == f"{tmp_path}/sft_val.parquet"
    assert sft.data.custom_cls.name == "GamePromptSFTDataset"
    assert sft.data.pad_mode == "no_padding"
    assert "hf_model" in sft.checkpoint.save_contents
    assert sft.trainer.default_local_dir == f"{config.medplay.output_dir}/sft/checkpoints"
    assert sft_option(profile) == ("cpu-smoke" if profile == "cpu-smoke" else "base")


def test_sft_overrides_reach_the_sft_tree(tmp_path):
    config = compose_sft_config(["profile=cpu-smoke", "sft.optim.lr=0.5", f"medplay.model.path={tmp_path}"])
    assert config.sft.optim.lr == 0.5
    assert config.sft.model.path == str(tmp_path)
    assert config.sft.engine.dtype == "float32"


def test_missing_sft_data_is_one_line_exit_2(tmp_path, capsys):
    from medical_team.cli import main

    status = main(["sft", "profile=cpu-smoke", f"medplay.data_dir={tmp_path}", f"medplay.output_dir={tmp_path}"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith("medplay sft: error: ") and "sft_train.parquet" in err and "medplay convert" in err
    assert len(err.strip().splitlines()) == 1


def test_loss_lines_merge_the_records_of_a_step(tmp_path):
    from medical_team.cli.sft import SUMMARY_DIGITS, SUMMARY_METRICS
    from medical_team.cli.train import step_lines

    def loss_lines(path):
        return step_lines(path, SUMMARY_METRICS, SUMMARY_DIGITS)

    metrics = tmp_path / "metrics.jsonl"
    records = [
        {"step": 1, "data": {"train/loss": 6.9, "train/lr": 0.001, "train/mfu": 0.0}},
        {"step": 2, "data": {"train/loss": 6.5}},
        {"step": 2, "data": {"val/loss": 6.4}},
    ]
    metrics.write_text("".join(json.dumps(record) + "\n" for record in records))
    assert loss_lines(metrics) == ["step 1: train/loss=6.9  train/lr=0.001", "step 2: train/loss=6.5  val/loss=6.4"]
    assert loss_lines(tmp_path / "missing.jsonl") == []
