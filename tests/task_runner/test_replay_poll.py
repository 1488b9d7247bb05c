"""verl's sampler seam builds medplay's quick-poll replay buffer from the overrides `make bench` gives its stock step.

`scripts/bench.py` compares the self-play step with verl's stock single-turn step; both must look for finished
rows equally often, or the ratio measures verl's 2 s poll. verl's own `_build_replay_buffer` runs here on
the composed config (no trainer, no Ray).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

from composed_configs import composed_config
from verl.trainer.ppo.v1.trainer_base import PPOTrainer

from medical_team.task_runner.replay_poll import REPLAY_POLL_S, QuickPollReplayBuffer

BENCH_RUNS = Path(__file__).resolve().parents[2] / "scripts" / "bench_runs.py"


def stock_sampler_overrides() -> list[str]:
    """The sampler overrides of scripts/bench_runs.py's STOCK_OVERRIDES (the stock step's replay buffer)."""
    spec = importlib.util.spec_from_file_location("bench_runs", BENCH_RUNS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return [override for override in module.STOCK_OVERRIDES if override.startswith("trainer.v1.sampler.")]


def test_the_stock_step_of_the_bench_polls_as_often_as_medplays() -> None:
    overrides = stock_sampler_overrides()
    assert overrides, "STOCK_OVERRIDES no longer name a sampler"
    config = composed_config(["trainer.v1.trainer_mode=sync", *overrides])
    trainer = SimpleNamespace(config=config, trainer_mode="sync", _add_prompts_to_generate=lambda count: None)

    buffer = PPOTrainer._build_replay_buffer(trainer)

    assert type(buffer) is QuickPollReplayBuffer
    assert buffer.poll_interval == REPLAY_POLL_S < 2.0
