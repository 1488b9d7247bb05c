"""End to end: `medplay train` on a two-node Ray cluster of this machine, two FSDP ranks (one per node).

    .venv/bin/python -m pytest -q -m e2e tests/e2e/test_two_nodes_cpu.py

One module-wide Ray cluster of two nodes (`ray start` processes, see `tests/ray_nodes.py`), each advertising
one (fake) GPU, the resource name of the `cpu` platform. `medplay train profile=cpu-smoke` joins it through
RAY_ADDRESS with `trainer.nnodes=2 trainer.n_gpus_per_node=1`, so verl places one actor/rollout rank (and
its vLLM server) on each node, over gloo; it plays 2 steps and checkpoints both ranks' shards. (Resuming
is verl's own loading of those shards; tests/e2e/test_train_cpu.py resumes a one-rank run after a SIGKILL.)
The nodes are stopped however the test ends.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cpu_smoke import convert, full_log, metrics_by_step, train
from ray_nodes import RayCluster, ray_cluster

from medical_team.run_folder.checkpoint_folder import read_tracker

pytestmark = [pytest.mark.e2e, pytest.mark.long]

NODES = ("head", "worker")
STEPS = 2
TWO_NODES = (
    "trainer.nnodes=2",
    "trainer.n_gpus_per_node=1",
    # One rank's 4 games a step (named, so the run plan does not scale cpu-smoke's per-GPU numbers with the ranks).
    "data.train_batch_size=4",
    # Each rank gets half of the 4-sample PPO mini-batch: the micro-batches must divide 2 (cpu-smoke's 4 do not).
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2",
)
# Ray actor classes of verl that hold one rank each: the FSDP actor/reference workers and the vLLM servers.
RANK_ACTOR_CLASSES = ("WorkerDict", "vLLMHttpServer")


@dataclass(frozen=True)
class Run:
    """The cluster, the run folder, what `medplay train` printed and logged, and the cluster's nodes and actors."""

    cluster: RayCluster
    root: Path
    console: str
    log: str
    state: dict[str, Any]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """Start the two nodes and train 2 steps on them; stop the nodes whatever happened."""
    if shutil.which("timeout") is None:
        pytest.skip("needs coreutils `timeout`")
    root = tmp_path_factory.mktemp("two-nodes")
    convert(root / "data")
    # 16 CPUs per node, over-committed like cpu-smoke's own cluster: every worker bundle asks for 3.
    with ray_cluster(NODES, num_cpus=16, num_gpus=1, log_dir=root) as cluster:
        result = train(root, STEPS, *TWO_NODES, env=cluster.env)
        yield Run(cluster, root, result.stdout + result.stderr, full_log(result.stdout), cluster.state())


def _node_ids(run: Run) -> dict[str, str]:
    """Node name -> Ray node id, told apart by the custom resource each node advertises."""
    found = {}
    for node in run.state["nodes"]:
        for ray_node in run.cluster.nodes:
            if ray_node.resource in node["resources"]:
                found[ray_node.name] = node["id"]
    return found


def test_the_cluster_has_two_nodes_with_one_device_each(run: Run) -> None:
    alive = [node for node in run.state["nodes"] if node["alive"]]
    assert len(alive) == 2, alive
    assert all(node["resources"].get("GPU") == 1 for node in alive), alive
    assert sorted(_node_ids(run)) == sorted(NODES)
    assert {node["ip"] for node in alive} == {node.ip for node in run.cluster.nodes}


def test_the_run_joined_the_cluster_instead_of_starting_one(run: Run) -> None:
    port = run.cluster.address.rsplit(":", 1)[1]
    assert f"medplay: Ray: starting ({run.cluster.address})" in run.console
    assert re.search(rf"Connecting to existing Ray cluster at address: [\d.]+:{port}\b", run.log)
    assert "Started a local Ray instance" not in run.log


def _class_name(actor: dict[str, Any]) -> str:
    """An actor's class without its qualifiers (verl defines WorkerDict inside a function)."""
    return actor["class"].rsplit(".", 1)[-1]


def test_the_run_placed_one_rank_on_each_node(run: Run) -> None:
    nodes = set(_node_ids(run).values())
    actors = run.state["actors"]
    jobs = {actor["job"] for actor in actors if _class_name(actor) == "WorkerDict"}
    classes = sorted({actor["class"] for actor in actors})
    assert len(jobs) == 1, f"expected the training run's workers, found jobs {jobs} among {classes}"
    for actor_class in RANK_ACTOR_CLASSES:
        placed = [a["node"] for a in actors if _class_name(a) == actor_class]
        assert sorted(placed) == sorted(nodes), f"{actor_class} actors on {placed}, nodes {nodes}"


def test_the_checkpoint_holds_both_ranks_shards(run: Run) -> None:
    actor = run.root / "checkpoints" / f"global_step_{STEPS}" / "actor"
    shards = sorted(path.name for path in actor.glob("model_world_size_*_rank_*.pt"))
    assert shards == ["model_world_size_2_rank_0.pt", "model_world_size_2_rank_1.pt"], shards
    assert (actor / "huggingface" / "model.safetensors").is_file()
    assert read_tracker(run.root / "checkpoints") == STEPS
    assert sorted(metrics_by_step(run.root)) == list(range(1, STEPS + 1))


def test_the_rollout_matched_the_actor_every_step(run: Run) -> None:
    # verl compares the vLLM servers' token probabilities with the actor's: both replicas got the weights.
    for step, data in metrics_by_step(run.root).items():
        assert data["training/rollout_probs_diff_max"] < 1e-3, f"step {step}: {data['training/rollout_probs_diff_max']}"
