"""The run plan's GPUs: how many the policy trains on, where the served judge runs, and the step's batches over them.

On one node (`trainer.nnodes: 1`) the run uses every GPU of one model this host lets it see (CUDA_VISIBLE_DEVICES
narrows them; hardware/gpu_set.py chooses the set and the judge's place), unless the run names
`trainer.n_gpus_per_node`, which is then checked against the host: more than it has stops the run here with the
count found. A private Ray cluster declares exactly the policy's GPUs (`ray_init.num_gpus`; Ray hands its GPU slots
0..N-1 to the first N GPUs a process sees, so the policy's are made the cluster's only ones when they are not those
first ones), and a judge served here is started with its own device list. The profile's games per step are for one
GPU: with several, `data.train_batch_size` and `ppo_mini_batch_size` scale with them unless the run names either,
and every split verl asserts later is checked now (hardware/gpu_batches.py). On the CPU the GPUs are Ray's fake
ones: as many as `trainer.n_gpus_per_node` says. docs/scale-out.md, "One host with several GPUs".
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

from omegaconf import DictConfig, OmegaConf

from medical_team.common.errors import UserInputError
from medical_team.hardware.gpu_batches import SCALED_KEYS, BatchSettings, batch_problems, batch_settings, scaled_batches
from medical_team.hardware.gpu_set import POLICY_GPUS_KEY, GpuSet, Placement, device_id, gpu_set, placement
from medical_team.hardware.host_facts import CUDA_VISIBLE_DEVICES, GpuFacts
from medical_team.launcher.environment import ENV_VARS_KEY, RAY_INIT

RAY_GPUS_KEY = f"{RAY_INIT}.num_gpus"
RAY_VISIBLE_KEY = f"{ENV_VARS_KEY}.{CUDA_VISIBLE_DEVICES}"


@dataclass(frozen=True)
class GpuPlan:
    """What the run's GPUs change in its config, the console's line, and the served judge's devices."""

    changes: dict[str, Any]
    line: str | None
    judge_devices: str | None  # CUDA_VISIBLE_DEVICES of the judge's process; None: the launcher's own
    card_gib: float | None  # one policy GPU's memory (None on the CPU)
    gpus: GpuSet | None = None
    placement: Placement | None = None


def _requested(config: DictConfig, named: Collection[str]) -> int | None:
    """The policy's GPUs per node the run names, None when it leaves them to medplay."""
    return int(OmegaConf.select(config, POLICY_GPUS_KEY)) if POLICY_GPUS_KEY in named else None


def _batches(settings: BatchSettings, ranks: int, named: Collection[str]) -> tuple[dict[str, int], BatchSettings]:
    """The scaled seed rows per step and per mini-batch (none when one GPU, or the run names either)."""
    if ranks == 1 or any(key in named for key in SCALED_KEYS):
        return {}, settings
    scaled = scaled_batches(settings, ranks)
    train, mini = scaled.values()
    return scaled, replace(settings, train_batch_size=train, ppo_mini_batch_size=mini)


def _games(settings: BatchSettings, scaled: bool, ranks: int) -> str:
    """`96 games a step (data.train_batch_size 24 x rollout.n 4, the profile's 6 for each of 4 GPUs)`."""
    games = f"{settings.games} games a step (data.train_batch_size {settings.train_batch_size} x rollout.n {settings.rollout_n}"
    return games + (
        f", the profile's {settings.train_batch_size // ranks} for each of {ranks} GPUs)" if scaled else ")"
    )


def _counted(count: int, what: str) -> str:
    """`1 FSDP rank`, `3 FSDP ranks`."""
    return f"{count} {what}{'' if count == 1 else 's'}"


def _policy_line(gpus: GpuSet, where: Placement) -> str:
    """Where the policy and the judge run, for the console."""
    policy = gpus.labels(range(where.policy))
    line = f"GPUs: {gpus.describe()}: the policy on {policy} ({_counted(where.policy, 'FSDP rank')}, a vLLM rollout "
    line += "replica each)"
    if where.judge_gpu is not None:
        line += f", the judge's vLLM on {gpus.labels([where.judge_gpu])} of its own"
    elif where.judge_served:
        line += f", the judge's vLLM beside it on {gpus.labels([0])}"
    if where.idle:
        line += f"; {_counted(where.idle, 'GPU')} idle"
    return line


def _check(settings: BatchSettings, ranks: int) -> None:
    """Stop the run now when verl would fail on a split of the step over `ranks` GPUs."""
    problems = batch_problems(settings, ranks)
    if problems:
        raise UserInputError(
            f"the step does not split over the policy's {ranks} GPU(s): " + "; ".join(problems)
            + " (docs/scale-out.md, 'One host with several GPUs')",
            field=POLICY_GPUS_KEY,
        )  # fmt: skip


def gpu_plan(
    config: DictConfig,
    container: dict,
    judge_served: bool,
    *,
    on_cpu: bool,
    private_cluster: bool,
    named: Collection[str],
    visible: Sequence[GpuFacts],
) -> GpuPlan:
    """The run's GPUs from its composed config (and `container`, the same as a plain dict) and this host's GPUs.

    `named`: the keys the run's overrides name; `visible`: the GPUs the run may see (host_facts.visible_gpus).
    """
    settings = batch_settings(container)
    nodes = int(OmegaConf.select(config, "trainer.nnodes"))
    requested = _requested(config, named)
    gpus = where = None
    if on_cpu or nodes > 1:  # Ray's fake GPUs, or a cluster whose nodes are not this host: the run's own numbers
        policy = requested or int(OmegaConf.select(config, POLICY_GPUS_KEY))
    else:
        gpus = gpu_set(visible)
        if gpus is None:
            raise UserInputError(
                "no GPU found through NVML (nvidia-ml-py not installed or listing none, or CUDA_VISIBLE_DEVICES hides "
                "them all); a GPU profile trains on a GPU: run with `--gpus all`, or choose profile=cpu-smoke",
                field=POLICY_GPUS_KEY,
            )
        where = placement(gpus.count, requested, judge_served, gpus.describe())
        policy = where.policy
    ranks = policy * nodes
    scaled, settings = _batches(settings, ranks, named)
    _check(settings, ranks)
    changes: dict[str, Any] = {POLICY_GPUS_KEY: policy, **scaled}
    if private_cluster:
        changes[RAY_GPUS_KEY] = policy
    judge_devices = line = None
    if gpus is not None and where is not None:
        policy_ids = [device_id(gpu) for gpu in gpus.gpus[: where.policy]]
        if private_cluster and policy_ids != [device_id(gpu) for gpu in gpus.visible[: where.policy]]:
            changes[RAY_VISIBLE_KEY] = ",".join(policy_ids)
        if judge_served and len(gpus.visible) > 1:
            judge_devices = device_id(gpus.gpus[where.judge_gpu if where.judge_gpu is not None else 0])
        line = f"{_policy_line(gpus, where)}; {_games(settings, bool(scaled), ranks)}"
    elif ranks > 1:
        device = "fake GPU" if on_cpu else "GPU"
        line = f"{_counted(nodes, 'node')} x {_counted(policy, device)}: {ranks} FSDP ranks; "
        line += _games(settings, bool(scaled), ranks)
    return GpuPlan(changes, line, judge_devices, None if gpus is None else gpus.vram_gib, gpus, where)
