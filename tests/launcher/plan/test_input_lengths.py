"""`medplay train` refuses, before the judge's server and Ray, data whose prompts or judge requests cannot fit.

Real files (`medplay convert`'s output of the bundled data, and of a CSV with a 48 K-character note) and the real
tokenizer of the tiny model. .venv/bin/python -m pytest -q tests/launcher/plan/test_input_lengths.py
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from long_notes import LONG_NOTE_ID, write_long_note_csv
from omegaconf import DictConfig, OmegaConf
from transformers import AutoTokenizer

from medical_team.cli import main
from medical_team.common.errors import UserInputError
from medical_team.configs import packaged_section
from medical_team.data.medec import TEST_CSV, VALIDATION_CSV, bundled_csv
from medical_team.game.dataset import ConvertOptions, convert_medec
from medical_team.game.prompt_fit import prompt_ids
from medical_team.game.prompts import assessor_messages
from medical_team.launcher.judge.judge_context import check_judge_context, longest_judge_request
from medical_team.launcher.plan.prompt_lengths import check_prompt_lengths, longest_prompt
from medical_team.run.settings import SelfPlaySettings, selfplay_settings


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir: Path):
    return AutoTokenizer.from_pretrained(tiny_model_dir)


@pytest.fixture(scope="module")
def bundled_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    output = tmp_path_factory.mktemp("bundled")
    convert_medec([bundled_csv(VALIDATION_CSV)], bundled_csv(TEST_CSV), output, ConvertOptions())
    return output


@pytest.fixture(scope="module")
def long_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("long")
    csv = write_long_note_csv(folder / "long.csv")
    convert_medec([csv], bundled_csv(TEST_CSV), folder / "data", ConvertOptions(benchmark_notes=4))
    return folder / "data"


def run_config(data: Path, model: Path, prompt_length: int = 1280, response_length: int = 48) -> DictConfig:
    """The keys the checks read, as the cpu-smoke profile sets them (the rollout's lengths are the data's)."""
    return OmegaConf.create(
        {
            "data": {
                "train_files": str(data / "train.parquet"),
                "val_files": str(data / "val.parquet"),
                "max_prompt_length": prompt_length,
                "max_response_length": response_length,
            },
            "actor_rollout_ref": {
                "model": {"path": str(model)},
                "rollout": {
                    "prompt_length": "${data.max_prompt_length}",
                    "response_length": "${data.max_response_length}",
                },
            },
        }
    )


def settings(**judge_serve: int) -> SelfPlaySettings:
    """configs/medplay.yaml's `medplay:` section (judge backend vllm), with these `judge.serve` values."""
    section = packaged_section()
    return selfplay_settings(
        {**section, "judge": {**section["judge"], "serve": {**section["judge"]["serve"], **judge_serve}}}
    )


def test_the_bundled_data_fits_the_cpu_smoke_prompt_length(bundled_data, tiny_model_dir, tokenizer):
    check_prompt_lengths(run_config(bundled_data, tiny_model_dir), settings(), tokenizer)
    longest = longest_prompt(tokenizer, bundled_data / "train.parquet", settings(), True, {})
    assert longest is not None and 1000 < longest.tokens <= 1280  # ~1150 tiny tokens: close, and inside


def test_a_note_too_long_for_the_prompt_length_is_named_with_its_row_and_tokens(long_data, tiny_model_dir, tokenizer):
    with pytest.raises(UserInputError) as caught:
        check_prompt_lengths(run_config(long_data, tiny_model_dir), settings(), tokenizer)
    error = caught.value
    assert error.file == str(long_data / "train.parquet") and error.field == "data.train_files"
    assert error.row in (13, 14)  # the note's two seeds (harmful, and its correction as a benign seed)
    match = re.search(rf"over note {LONG_NOTE_ID} takes (\d+) tokens, over data.max_prompt_length=1280", error.message)
    assert match and int(match.group(1)) > 10_000


def test_the_assessor_needs_room_for_a_whole_rewrite(bundled_data, tiny_model_dir, tokenizer):
    instructions = len(prompt_ids(tokenizer, assessor_messages("")))
    response_length = 1280 - instructions + 1
    with pytest.raises(UserInputError) as caught:
        check_prompt_lengths(run_config(bundled_data, tiny_model_dir, 1280, response_length), settings(), tokenizer)
    assert caught.value.field == "data.max_prompt_length"
    assert (
        f"a rewrite of data.max_response_length={response_length} tokens takes up to {instructions} + "
        f"{response_length} = 1281 tokens, over data.max_prompt_length=1280" in caught.value.message
    )
    check_prompt_lengths(run_config(bundled_data, tiny_model_dir, 1280, response_length - 1), settings(), tokenizer)


def test_the_served_judges_context_must_hold_the_longest_request(bundled_data, tiny_model_dir, tokenizer):
    config = run_config(bundled_data, tiny_model_dir, 1280, 48)
    size = longest_judge_request(tokenizer, bundled_data / "train.parquet", settings(), 48, 128)
    assert size is not None and size.total == size.prompt_tokens + 48 + 128
    check_judge_context(config, settings(max_model_len=size.total), tokenizer)
    with pytest.raises(UserInputError) as caught:
        check_judge_context(config, settings(max_model_len=size.total - 1), tokenizer)
    assert caught.value.field == "medplay.judge.serve.max_model_len"
    assert (
        f"{size.prompt_tokens} tokens of instructions and notes + 48 of rewrite (data.max_response_length) + 128 of "
        f"verdict (medplay.judge.serve.max_tokens) = {size.total} tokens, over "
        f"medplay.judge.serve.max_model_len={size.total - 1}" in caught.value.message
    )


def test_medplay_train_refuses_an_overlong_note_before_anything_starts(long_data, tmp_path, capfd):
    status = main(["train", "profile=cpu-smoke", f"medplay.data_dir={long_data}", f"medplay.output_dir={tmp_path}"])
    err = capfd.readouterr().err
    assert status == 2, err
    assert re.search(
        rf"medplay train: error: {long_data}/train.parquet:row 1[34]: field 'data.train_files': the (attacker|assessor)'s "
        rf"prompt over note {LONG_NOTE_ID} takes \d+ tokens, over data.max_prompt_length=1280",
        err,
    ), err
    log = next((tmp_path / "logs").glob("train-*.log")).read_text()
    assert "Ray" not in log and not (tmp_path / "judge-server.log").exists()


def test_medplay_train_refuses_a_served_judge_too_short_for_its_requests(bundled_data, tiny_model_dir, tmp_path, capfd):
    status = main(
        [
            "train",
            "profile=cpu-smoke",
            f"medplay.data_dir={bundled_data}",
            f"medplay.output_dir={tmp_path}",
            "medplay.judge.backend=vllm",
            f"medplay.judge.model={tiny_model_dir}",
            "medplay.judge.serve.max_model_len=1024",
        ]
    )
    err = capfd.readouterr().err
    assert status == 2, err
    assert "field 'medplay.judge.serve.max_model_len': the longest judge request" in err
    assert "over medplay.judge.serve.max_model_len=1024" in err
    assert not (tmp_path / "judge-server.log").exists()
