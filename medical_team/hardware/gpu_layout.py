"""What runs on each GPU of the host and its memory plan: the policy's ranks, the served judge, the idle and left-out.

Pure: from the GPU set and its placement (gpu_set.py) and the memory plans of a policy GPU with and without the judge
beside it (memory_plan.py), one row per GPU for `medplay probe` (`--plan` prints them as a table; both write them
to their JSON report).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from medical_team.hardware.gpu_set import GpuSet, Placement
from medical_team.hardware.memory_plan import MemoryPlan

EVERY_PHASE = "every phase"  # the judge's vLLM holds its share throughout: it never sleeps


@dataclass(frozen=True)
class GpuRow:
    """One GPU: what runs there, and its busiest phase's peak against its memory."""

    gpu: int  # nvidia-smi's index
    runs: str
    peak_phase: str | None  # None: nothing of the run
    peak_gib: float
    vram_gib: float

    @property
    def fraction(self) -> float:
        """The peak's share of the GPU."""
        return self.peak_gib / self.vram_gib

    def to_json_dict(self) -> dict:
        """The row as plain JSON-ready data."""
        return {**asdict(self), "peak_gib": round(self.peak_gib, 2), "fraction": round(self.fraction, 4)}


def gpu_rows(gpus: GpuSet, where: Placement, policy: MemoryPlan, shared: MemoryPlan | None) -> list[GpuRow]:
    """A row per visible GPU: `policy` is a policy GPU's plan without the judge, `shared` with it (a judge beside the
    policy's first GPU; None when no judge is served here). The set's GPUs are the plans' card (an emulated one:
    `medplay.emulate_gpu_gib`)."""
    rows, card = [], policy.vram_gib
    for position, gpu in enumerate(gpus.gpus):
        if position < where.policy:
            runs = f"policy: FSDP rank {position}, vLLM rollout replica {position}"
            plan = shared if where.judge_beside_policy and position == 0 and shared is not None else policy
            if plan is shared:
                runs += ", the judge's vLLM"
            rows.append(GpuRow(gpu.index, runs, plan.peak.name, plan.peak.peak_gib, card))
        elif position == where.judge_gpu:
            engine = policy.engines["judge"]
            rows.append(GpuRow(gpu.index, "the judge's vLLM", EVERY_PHASE, engine.engine_gib, card))
        else:
            rows.append(GpuRow(gpu.index, "idle", None, 0.0, card))
    for gpu in gpus.left_out:
        rows.append(GpuRow(gpu.index, f"left out ({gpu.name}: not of the set's model)", None, 0.0, gpu.total_vram_gib))
    return sorted(rows, key=lambda row: row.gpu)
