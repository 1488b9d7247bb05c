"""`medplay eval` user mistakes: one clear line naming file and field, exit status 2, no traceback."""

import shutil

import pytest

from medical_team.cli import main


def run_eval(capsys, *argv: str) -> str:
    assert main(["eval", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("medplay eval: error: ") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    return err


def test_missing_model_folder(capsys, tmp_path):
    err = run_eval(capsys, "--model", str(tmp_path / "nope"), "--output", str(tmp_path / "o"))
    assert "no such file or folder" in err and "field '--model'" in err


def test_checkpoint_without_hf_weights_says_how_to_export(capsys, tmp_path, tiny_model_dir):
    hf = tmp_path / "ckpt" / "global_step_2" / "actor" / "huggingface"
    hf.mkdir(parents=True)
    shutil.copy(tiny_model_dir / "config.json", hf / "config.json")
    err = run_eval(capsys, "--model", str(tmp_path / "ckpt"), "--output", str(tmp_path / "o"))
    assert "python -m verl.model_merger merge --backend fsdp" in err
    assert "hf_model" in err


def test_hub_id_not_in_local_cache(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    err = run_eval(capsys, "--model", "nobody/no-such-model", "--output", str(tmp_path / "o"), "--limit", "1")
    assert "cannot load the model locally" in err


@pytest.mark.parametrize("flag", ["--limit", "--batch-size", "--max-new-tokens"])
def test_counts_must_be_positive(capsys, tmp_path, flag):
    err = run_eval(capsys, "--model", str(tmp_path), "--output", str(tmp_path / "o"), flag, "0")
    assert f"field '{flag}': must be at least 1" in err


def test_game_parquet_is_not_a_benchmark(capsys, tmp_path, tiny_model_dir):
    assert main(["convert", "--output", str(tmp_path / "data")]) == 0
    capsys.readouterr()
    err = run_eval(
        capsys,
        "--model",
        str(tiny_model_dir),
        "--output",
        str(tmp_path / "o"),
        "--benchmark",
        str(tmp_path / "data" / "train.parquet"),
    )
    assert "train.parquet:row 1: field 'data_source'" in err and "benchmark.parquet" in err
