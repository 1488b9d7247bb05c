"""The host's GPUs a run uses, and what runs on each: the policy's ranks and the served judge's own GPU.

Pure functions over the GPUs host_facts.py lists: `gpu_set` takes every visible GPU of one model (on a mixed host
the largest set of identical GPUs, the others named as left out), `placement` splits that set between the policy
(one FSDP rank and one vLLM rollout replica per GPU) and a judge served on this host (a GPU of its own from two
GPUs on; beside the policy's first GPU on one). The run plan (launcher/plan/gpu_plan.py) and `medplay probe` read them;
docs/scale-out.md, "One host with several GPUs", says what a user sets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from medical_team.common.errors import UserInputError
from medical_team.hardware.host_facts import GpuFacts

# verl's key for the GPUs each node trains the policy on; medplay sets it from the host unless the run names it.
POLICY_GPUS_KEY = "trainer.n_gpus_per_node"


def gpu_model(gpu: GpuFacts) -> tuple[str, int]:
    """What makes two GPUs identical here: the same name and the same memory (whole GiB)."""
    return gpu.name, round(gpu.total_vram_gib)


def device_id(gpu: GpuFacts) -> str:
    """How CUDA_VISIBLE_DEVICES names this GPU for a child process: its UUID, else its index."""
    return gpu.uuid or str(gpu.index)


@dataclass(frozen=True)
class GpuSet:
    """The GPUs a run may use: every visible GPU of one model, in the order they are visible."""

    gpus: tuple[GpuFacts, ...]
    visible: tuple[GpuFacts, ...]  # every GPU the run could see, the set's and the others

    @property
    def count(self) -> int:
        """GPUs in the set."""
        return len(self.gpus)

    @property
    def name(self) -> str:
        """The set's model."""
        return self.gpus[0].name

    @property
    def vram_gib(self) -> float:
        """One GPU's memory (the smallest of the set, should drivers report them a little apart)."""
        return min(gpu.total_vram_gib for gpu in self.gpus)

    @property
    def left_out(self) -> tuple[GpuFacts, ...]:
        """Visible GPUs of other models."""
        return tuple(gpu for gpu in self.visible if gpu not in self.gpus)

    def labels(self, positions: Sequence[int]) -> str:
        """`GPU 0, 1, 2` for these positions of the set (nvidia-smi's indices)."""
        return "GPU " + ", ".join(str(self.gpus[position].index) for position in positions)

    def describe(self) -> str:
        """`4 x NVIDIA H100 80GB HBM3 (79.2 GiB each; GPU 0, 1, 2, 3)`, and the GPUs left out."""
        text = f"{self.count} x {self.name} ({self.vram_gib:.1f} GiB each; {self.labels(range(self.count))})"
        if self.left_out:
            others = ", ".join(f"GPU {gpu.index} ({gpu.name}, {gpu.total_vram_gib:.1f} GiB)" for gpu in self.left_out)
            text += f"; left out, not of this model: {others}"
        return text


def gpu_set(visible: Sequence[GpuFacts]) -> GpuSet | None:
    """Every visible GPU of one model: the largest set of identical ones (ties: more memory, then the first seen).

    None without a GPU.
    """
    if not visible:
        return None
    groups: dict[tuple[str, int], list[GpuFacts]] = {}
    for gpu in visible:
        groups.setdefault(gpu_model(gpu), []).append(gpu)
    chosen = max(groups.values(), key=lambda group: (len(group), group[0].total_vram_gib))
    return GpuSet(tuple(chosen), tuple(visible))


@dataclass(frozen=True)
class Placement:
    """Which GPUs of the set the policy trains on and where a judge served on this host runs (set positions)."""

    available: int  # GPUs of the set
    policy: int  # the policy trains on the set's first `policy` GPUs
    judge_served: bool  # a judge runs on this host (`medplay.judge.backend: vllm`)
    judge_gpu: int | None  # the judge's own GPU; None with a served judge: beside the policy's first GPU

    @property
    def judge_beside_policy(self) -> bool:
        """The judge shares the policy's first GPU (today's memory plan with the judge's share in it)."""
        return self.judge_served and self.judge_gpu is None

    @property
    def idle(self) -> int:
        """GPUs of the set nothing runs on."""
        return self.available - self.policy - (self.judge_gpu is not None)


def placement(available: int, requested: int | None, judge_served: bool, found: str) -> Placement:
    """The policy's GPUs and the judge's place among `available` identical GPUs.

    `requested`: the policy's GPUs the run names (trainer.n_gpus_per_node), None to let medplay decide: every GPU,
    less one of its own for a served judge from two GPUs on. A named count takes the set's first GPUs; the judge
    then gets the next one when there is one left, else shares the first. `found` says what the host has, for the
    refusal of a count above it.
    """
    if requested is not None and requested > available:
        raise UserInputError(
            f"{requested} GPUs asked for; this host has {available}: {found}. Name {available} or fewer, or leave "
            f"{POLICY_GPUS_KEY} out to train on every GPU (CUDA_VISIBLE_DEVICES narrows the GPUs a run sees)",
            field=POLICY_GPUS_KEY,
        )
    if requested is None:
        own = judge_served and available >= 2
        return Placement(available, available - own, judge_served, available - 1 if own else None)
    judge_gpu = requested if judge_served and requested < available else None
    return Placement(available, requested, judge_served, judge_gpu)
