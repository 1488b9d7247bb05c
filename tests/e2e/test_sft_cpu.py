"""End to end: `medplay sft profile=cpu-smoke` runs verl's own SFT trainer on CPU and writes a model folder that loads.

    .venv/bin/python -m pytest -q tests/e2e/test_sft_cpu.py

One module-wide run converts the bundled MEDEC data and fine-tunes the tiny random model for a few
steps on a slice of sft_train.parquet (CI time); the tests read what it left behind.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from medical_team.cli import main
from medical_team.launcher.sft.sft_dataset import GamePromptSFTDataset

pytestmark = pytest.mark.e2e

MEDPLAY = str(Path(sys.executable).with_name("medplay"))
# A hang guard, not a speed target.
SFT_TIMEOUT_S = 480
STEPS = 8
TRAIN_ROWS = STEPS * 8  # cpu-smoke's batch is 8 rows: one pass over the slice
VAL_ROWS = 16


@dataclass(frozen=True)
class SftRun:
    """A finished `medplay sft` run."""

    root: Path
    result: subprocess.CompletedProcess[str]

    @property
    def model_dir(self) -> Path:
        return self.root / "sft" / "model"

    @property
    def initial_model_dir(self) -> Path:
        return self.root / "tiny-qwen3"

    def metric(self, name: str) -> dict[int, float]:
        """step -> value of one metric in the run's metrics file."""
        values = {}
        for line in (self.root / "sft" / "metrics.jsonl").read_text().splitlines():
            record = json.loads(line)
            if name in record["data"]:
                values[record["step"]] = record["data"][name]
        return values


@pytest.fixture(scope="module")
def sft_run(tmp_path_factory) -> SftRun:
    root = tmp_path_factory.mktemp("sft-run")
    assert main(["convert", "--output", str(root / "data")]) == 0
    command = [
        "timeout",
        "--kill-after=30",
        str(SFT_TIMEOUT_S),
        MEDPLAY,
        "sft",
        "profile=cpu-smoke",
        f"medplay.output_dir={root}",
        f"medplay.data_dir={root / 'data'}",
        f"sft.data.train_max_samples={TRAIN_ROWS}",
        f"sft.data.val_max_samples={VAL_ROWS}",
        f"sft.trainer.total_training_steps={STEPS}",
        f"sft.trainer.test_freq={STEPS // 2}",
    ]
    result = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return SftRun(root, result)


def val_loss(model_dir: Path, val_file: Path) -> float:
    """Token-mean negative log-likelihood of the targets of the first VAL_ROWS validation examples."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    dataset = GamePromptSFTDataset(str(val_file), tokenizer, {"max_length": 2048}, max_samples=VAL_ROWS)
    total, count = 0.0, 0
    with torch.no_grad():
        for index in range(len(dataset)):
            item = dataset[index]
            logits = model(input_ids=item["input_ids"][None]).logits[0, :-1]
            nll = torch.nn.functional.cross_entropy(logits, item["input_ids"][1:], reduction="none")
            mask = item["loss_mask"][1:].bool()
            total, count = total + float(nll[mask].sum()), count + int(mask.sum())
    return total / count


def test_cli_prints_the_losses_and_the_model_folder(sft_run: SftRun):
    out = sft_run.result.stdout
    assert f"step {STEPS}: train/loss=" in out and "val/loss=" in out
    assert f"model: {sft_run.model_dir}" in out


def test_validation_loss_falls(sft_run: SftRun):
    train, val = sft_run.metric("train/loss"), sft_run.metric("val/loss")
    assert sorted(train) == list(range(1, STEPS + 1)) and sorted(val) == [STEPS // 2, STEPS]
    assert train[STEPS] < train[1] and val[STEPS] < val[STEPS // 2]
    val_file = sft_run.root / "data" / "sft_val.parquet"
    before, after = val_loss(sft_run.initial_model_dir, val_file), val_loss(sft_run.model_dir, val_file)
    # A random model predicts about uniformly over the tiny vocabulary.
    assert abs(before - math.log(1024)) < 0.5
    assert after < before - 0.2, (before, after)


def test_model_folder_is_complete_and_changed(sft_run: SftRun):
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    assert {"config.json", "model.safetensors", "tokenizer.json", "generation_config.json"} <= {
        path.name for path in sft_run.model_dir.iterdir()
    }
    assert AutoTokenizer.from_pretrained(sft_run.model_dir).chat_template
    before = load_file(sft_run.initial_model_dir / "model.safetensors")
    after = load_file(sft_run.model_dir / "model.safetensors")
    assert before.keys() == after.keys()
    assert any(not torch.equal(before[name], after[name].to(before[name].dtype)) for name in before)


def test_model_folder_loads_in_medplay_eval(sft_run: SftRun, tmp_path):
    status = main(
        ["eval", "--model", str(sft_run.model_dir), "--output", str(tmp_path), "--limit", "2", "--max-new-tokens", "16"]
    )
    assert status == 0
    assert json.loads((tmp_path / "eval.json").read_text())
