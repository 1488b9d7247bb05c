"""The appliance's pipeline (real entrypoint, supervisord, its own Ray head) training on two fake GPUs, on the CPU.

    PYTHONPATH=tests .venv/bin/python -m pytest -q -m long tests/container/test_appliance_two_gpus.py

`train trainer.n_gpus_per_node=2`, as `docker run medplay:cpu train trainer.n_gpus_per_node=2` runs it: the probe's
run overrides make the pipeline's Ray head declare two GPUs (cpu-smoke's profile declares one), the trainer joins
that head and trains one step with two FSDP ranks, and the pipeline's console names them. `long`: a real run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.long]

SHARDS = ["model_world_size_2_rank_0.pt", "model_world_size_2_rank_1.pt"]


def test_two_fake_gpus_train_through_the_pipelines_own_ray_head(appliance):
    result = appliance.run("train", "trainer.total_training_steps=1", "trainer.n_gpus_per_node=2")

    assert result.returncode == 0, result.stdout[-8000:]
    head_args = (Path(appliance.env["MEDPLAY_RUN_DIR"]) / "ray-head.args").read_text().splitlines()
    assert "--num-gpus=2" in head_args
    assert "1 node x 2 fake GPUs: 2 FSDP ranks; " in result.stdout
    actor = appliance.checkpoints / "global_step_1" / "actor"
    assert sorted(path.name for path in actor.glob("model_world_size_*_rank_*.pt")) == SHARDS
