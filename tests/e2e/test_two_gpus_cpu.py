"""End to end: one node with two (fake) GPUs trains on both, two FSDP ranks and two vLLM replicas, and resumes.

    PYTHONPATH=tests .venv/bin/python -m pytest -q -m long tests/e2e/test_two_gpus_cpu.py

`medplay train profile=cpu-smoke trainer.n_gpus_per_node=2`, as a user asks for two GPUs on one host: the run plan
(medical_team/launcher/plan/gpu_plan.py) declares two of Ray's fake GPUs for its private cluster, doubles the profile's
games per step (one GPU's share for each) and checks every split verl asserts later; verl then places one actor
rank and one vLLM rollout server on each. The first run trains 2 steps and checkpoints both ranks' shards; the
second resumes from them (`trainer.resume_mode=auto`) and trains step 3. `long`: two real runs cost minutes.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from cpu_smoke import convert, full_log, metrics_by_step, train

from medical_team.run_folder.checkpoint_folder import read_tracker

pytestmark = [pytest.mark.e2e, pytest.mark.long]

FIRST_STEPS, FINAL_STEPS = 2, 3
TWO_GPUS = "trainer.n_gpus_per_node=2"
PROFILE_SEEDS = 4  # cpu-smoke's data.train_batch_size, for one GPU
SHARDS = ["model_world_size_2_rank_0.pt", "model_world_size_2_rank_1.pt"]


@dataclass(frozen=True)
class Runs:
    """The run folder, and the console and full log of the first run and of the resumed one."""

    root: Path
    first_console: str
    first_log: str
    resumed_console: str
    resumed_log: str


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """Train 2 steps on two fake GPUs, then resume on them to step 3."""
    if shutil.which("timeout") is None:
        pytest.skip("needs coreutils `timeout`")
    root = tmp_path_factory.mktemp("two-gpus")
    convert(root / "data")
    first = train(root, FIRST_STEPS, TWO_GPUS)
    resumed = train(root, FINAL_STEPS, TWO_GPUS, "trainer.resume_mode=auto")
    return Runs(
        root,
        first.stdout + first.stderr,
        full_log(first.stdout),
        resumed.stdout + resumed.stderr,
        full_log(resumed.stdout),
    )


def test_the_console_names_the_two_ranks_and_the_doubled_step(runs: Runs) -> None:
    seeds = 2 * PROFILE_SEEDS
    assert "1 node x 2 fake GPUs: 2 FSDP ranks; " in runs.first_console, runs.first_console[-3000:]
    assert f"{seeds} games a step (data.train_batch_size {seeds} x rollout.n 1, " in runs.first_console
    assert f"the profile's {PROFILE_SEEDS} for each of 2 GPUs)" in runs.first_console


@pytest.mark.parametrize("actor_class", ["WorkerDict", "vLLMHttpServer"])
def test_verl_ran_two_ranks_and_two_rollout_servers(runs: Runs, actor_class: str) -> None:
    # Ray prefixes each actor's lines in the driver's log with its class and process: one process per rank.
    processes = set(re.findall(rf"\({actor_class} pid=(\d+)", runs.first_log))
    assert len(processes) == 2, f"{actor_class} processes in the log: {sorted(processes)}"


def test_the_checkpoints_hold_both_ranks_shards(runs: Runs) -> None:
    checkpoints = runs.root / "checkpoints"
    kept = sorted(checkpoints.glob("global_step_*"))
    # trainer.max_actor_ckpt_to_keep (2): the first run's last checkpoint and the resumed run's
    assert [folder.name for folder in kept] == [f"global_step_{FIRST_STEPS}", f"global_step_{FINAL_STEPS}"]
    for folder in kept:
        shards = sorted(path.name for path in (folder / "actor").glob("model_world_size_*_rank_*.pt"))
        assert shards == SHARDS, f"{folder.name}: {shards}"
    assert read_tracker(checkpoints) == FINAL_STEPS


def test_the_resumed_run_started_from_both_shards_and_trained_only_step_3(runs: Runs) -> None:
    resumed_from = runs.root / "checkpoints" / f"global_step_{FIRST_STEPS}"
    assert f"medplay: resuming from {resumed_from}" in runs.resumed_console
    assert f"step:{FINAL_STEPS} -" in runs.resumed_log
    assert "step:1 -" not in runs.resumed_log and "step:2 -" not in runs.resumed_log
    assert sorted(metrics_by_step(runs.root)) == list(range(1, FINAL_STEPS + 1))

