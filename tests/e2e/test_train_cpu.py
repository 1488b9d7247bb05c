"""End to end: `medplay train profile=cpu-smoke` runs verl's real trainer on CPU, checkpoints, and resumes.

    .venv/bin/python -m pytest -q -m e2e tests/e2e/test_train_cpu.py

One module-wide run converts the bundled MEDEC data and trains 2 steps; the last test resumes it to 3.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from medical_team.vocab import ERROR_TYPES, Category

pytestmark = pytest.mark.e2e

MEDPLAY = str(Path(sys.executable).with_name("medplay"))
# A hang guard, not a speed target: a failed weight sync makes verl hang instead of exiting.
TRAIN_TIMEOUT_S = 480
FIRST_RUN_STEPS = 2

ADVERSARIAL = [c.value for c in Category if c.adversarial]
# Every per-step metric name of the game's specification, with its placeholders expanded.
GAME_METRICS = (
    [f"game/count/{c.value}" for c in Category]
    + ["game/tie_rate", "game/error_note_rate"]
    + ["assessor/accuracy", *(f"assessor/accuracy/{c.value}" for c in Category)]
    + [f"assessor/recall/{t}" for t in ERROR_TYPES]
    + ["assessor/false_alarm_rate", "assessor/miss_rate", "assessor/sentence_accuracy"]
    + ["assessor/reward_mean", "assessor/format_violation_rate"]
    + ["attacker/success_rate", *(f"attacker/success_rate/{c}" for c in ADVERSARIAL)]
    + ["attacker/faithfulness_rate", "attacker/reward_mean", "attacker/format_violation_rate"]
    + ["judge/calls", "judge/parse_error_rate", "judge/latency_s"]
)


def train(root: Path, steps: int, *overrides: str) -> subprocess.CompletedProcess[str]:
    """`medplay train profile=cpu-smoke` into `root`, under a hard timeout (a failed weight sync hangs verl)."""
    command = [
        "timeout",
        "--kill-after=30",  # SIGTERM asks the trainer to save and stop; SIGKILL if it cannot
        str(TRAIN_TIMEOUT_S),
        MEDPLAY,
        "train",
        "profile=cpu-smoke",
        f"medplay.output_dir={root}",
        f"medplay.data_dir={root / 'data'}",
        f"trainer.total_training_steps={steps}",
        *overrides,
    ]
    result = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    return result


def metrics_by_step(root: Path) -> dict[int, dict[str, float]]:
    """The metrics file's records by step (the last record of a step wins)."""
    lines = (root / "checkpoints" / "metrics.jsonl").read_text().splitlines()
    return {record["step"]: record["data"] for record in map(json.loads, filter(None, lines))}


@pytest.fixture(scope="module")
def run_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A converted data set and a finished 2-step training run."""
    if shutil.which("timeout") is None:
        pytest.skip("needs coreutils `timeout`")
    root = tmp_path_factory.mktemp("cpu-smoke")
    subprocess.run([MEDPLAY, "convert", "--output", str(root / "data")], check=True, capture_output=True, timeout=300)
    train(root, FIRST_RUN_STEPS)
    return root


def test_checkpoint_folder_and_tracker_exist(run_root: Path) -> None:
    checkpoints = run_root / "checkpoints"
    assert (checkpoints / "latest_checkpointed_iteration.txt").read_text().strip() == str(FIRST_RUN_STEPS)
    assert (checkpoints / f"global_step_{FIRST_RUN_STEPS}" / "actor" / "huggingface" / "model.safetensors").is_file()


def test_policy_weights_in_checkpoint_differ_from_initial(run_root: Path) -> None:
    initial = load_file(run_root / "tiny-qwen3" / "model.safetensors")
    trained = load_file(
        run_root / "checkpoints" / f"global_step_{FIRST_RUN_STEPS}" / "actor" / "huggingface" / "model.safetensors"
    )
    assert set(initial) <= set(trained)
    changed = [name for name, tensor in initial.items() if not torch.equal(tensor, trained[name].to(tensor.dtype))]
    assert len(changed) > len(initial) // 2, f"only {changed} changed"


def test_metrics_file_has_every_step_and_every_game_metric(run_root: Path) -> None:
    steps = metrics_by_step(run_root)
    assert sorted(steps) == list(range(1, FIRST_RUN_STEPS + 1))
    for step, data in steps.items():
        missing = [name for name in GAME_METRICS if name not in data]
        assert not missing, f"step {step} lacks {missing}"


def test_both_roles_contributed_samples_in_adversarial_steps(run_root: Path) -> None:
    adversarial_steps = {
        step: data
        for step, data in metrics_by_step(run_root).items()
        if any(data[f"game/count/{c}"] for c in ADVERSARIAL)
    }
    assert adversarial_steps, "no step played an adversarial game"
    for step, data in adversarial_steps.items():
        assert data["samples/attacker"] > 0 and data["samples/assessor"] > 0, f"step {step}: {data}"


def test_resume_continues_from_the_saved_step(run_root: Path) -> None:
    result = train(run_root, FIRST_RUN_STEPS + 1, "trainer.resume_mode=auto")
    log = result.stdout + result.stderr
    assert f"step:{FIRST_RUN_STEPS + 1} -" in log
    assert "step:1 -" not in log, "the resumed run started again from step 1"
    tracker = run_root / "checkpoints" / "latest_checkpointed_iteration.txt"
    assert tracker.read_text().strip() == str(FIRST_RUN_STEPS + 1)
    assert FIRST_RUN_STEPS + 1 in metrics_by_step(run_root)
