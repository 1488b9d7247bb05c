"""End to end: `medplay train profile=cpu-smoke` with LoRA: no reference copy, weight sync right, checkpoint loadable.

    .venv/bin/python -m pytest -q -m e2e tests/e2e/test_lora_cpu.py

One module-wide run of 3 steps with verl's LoRA keys (rank 8, alpha 16, all linear layers) and the
learning probe on, so the rewards differ between games and the adapter moves before the last step
(8 games a step: a step whose every game of a role earns the same reward, so no gradient, is rare).
Later rollouts then sample from the synced adapter; verl's `training/rollout_probs_diff_max`
compares the rollout's token probabilities with the actor's at every step. The checkpoint's `actor/lora_adapter`
and merged `actor/huggingface` folders are loaded back with PEFT and transformers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from cpu_smoke import convert, full_log, metrics_by_step, train
from safetensors.torch import load_file

from medical_team.evaluate.model_source import resolve_model

pytestmark = [pytest.mark.e2e, pytest.mark.long]

STEPS = 3
RANK, ALPHA = 8, 16
LORA_OVERRIDES = (
    f"actor_rollout_ref.model.lora_rank={RANK}",
    f"actor_rollout_ref.model.lora_alpha={ALPHA}",
    "actor_rollout_ref.model.target_modules=all-linear",
    # Rewards that differ between games (docs/game.md, "Learning probe"), so step 1 changes the adapter.
    "medplay.learning_probe.enabled=true",
    "data.train_batch_size=8",
    # The adapter starts at zero (lora_B): a large step makes the merged model visibly differ from the base.
    "actor_rollout_ref.actor.optim.lr=1e-2",
)
ROLLOUT_PROBS_DIFF_MAX = 1e-3  # verl's rollout-vs-actor check, as for full fine-tuning
SAME_LOGITS = 1e-5  # merged model against base + adapter, fp32
ADAPTER_MOVED = 1e-3  # merged model against the base


@dataclass(frozen=True)
class LoraRun:
    """The run folder and the full log of the finished run."""

    root: Path
    log: str


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> LoraRun:
    """Convert the data and train 3 LoRA steps."""
    root = tmp_path_factory.mktemp("cpu-smoke-lora")
    convert(root / "data")
    result = train(root, STEPS, *LORA_OVERRIDES)
    return LoraRun(root, full_log(result.stdout))


@pytest.fixture(scope="module")
def actor_dir(run: LoraRun) -> Path:
    """The last step's actor checkpoint."""
    return run.root / "checkpoints" / f"global_step_{STEPS}" / "actor"


def test_the_actor_is_its_own_reference(run: LoraRun) -> None:
    # verl builds no reference worker for a LoRA actor: the base without adapters gives the reference log-probs.
    # (Full fine-tuning logs dict_keys(['actor_rollout_ref']): the reference is a second model in the same worker.)
    assert "create worker group dict_keys(['actor_rollout'])" in run.log


def test_adapter_trained_and_rollout_matches_actor_after_each_sync(run: LoraRun) -> None:
    steps = metrics_by_step(run.root)
    assert sorted(steps) == list(range(1, STEPS + 1))
    moved = [step for step in range(1, STEPS) if steps[step]["actor/grad_norm"] > 0]
    assert moved, f"the adapter got no gradient before the last step: {steps}"
    for step, data in steps.items():
        assert data["training/rollout_probs_diff_max"] < ROLLOUT_PROBS_DIFF_MAX, (step, data)


def test_checkpoint_keeps_the_adapter(actor_dir: Path) -> None:
    config = json.loads((actor_dir / "lora_adapter" / "adapter_config.json").read_text())
    assert (config["peft_type"], config["r"], config["lora_alpha"]) == ("LORA", RANK, ALPHA)
    assert set(config["target_modules"]) == {
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    }
    weights = load_file(actor_dir / "lora_adapter" / "adapter_model.safetensors")
    assert weights and all(".lora_A." in name or ".lora_B." in name for name in weights)


def test_merged_folder_is_a_plain_model_of_the_base_layout(run: LoraRun, actor_dir: Path) -> None:
    # The same names and shapes as the base model folder the run started from (what vLLM and `medplay train` load).
    base = load_file(run.root / "tiny-qwen3" / "model.safetensors")
    merged = load_file(actor_dir / "huggingface" / "model.safetensors")
    assert {name: tuple(t.shape) for name, t in merged.items()} == {name: tuple(t.shape) for name, t in base.items()}
    # `medplay eval` resolves the checkpoint root to this folder.
    assert resolve_model(str(run.root / "checkpoints")) == actor_dir / "huggingface"


def test_merged_model_gives_the_logits_of_base_plus_adapter(run: LoraRun, actor_dir: Path) -> None:
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    ids = torch.randint(3, 1000, (2, 40), generator=torch.Generator().manual_seed(0))
    merged = AutoModelForCausalLM.from_pretrained(actor_dir / "huggingface", dtype=torch.float32).eval()
    base = AutoModelForCausalLM.from_pretrained(run.root / "tiny-qwen3", dtype=torch.float32).eval()
    with torch.no_grad():
        base_logits = base(ids).logits
        adapted = PeftModel.from_pretrained(base, actor_dir / "lora_adapter").eval()
        adapted_logits = adapted(ids).logits
        merged_logits = merged(ids).logits
    assert (merged_logits - adapted_logits).abs().max().item() < SAME_LOGITS
    assert (merged_logits - base_logits).abs().max().item() > ADAPTER_MOVED
