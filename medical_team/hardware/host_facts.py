"""What the probe measures on this host: GPUs, driver, torch's build, packages, shared memory, disk, CPU and RAM.

`collect_facts` gathers them (torch, nvidia-smi, a fresh interpreter per package import); the assessment of
what they allow is probe.py's, pure and tested on made-up facts.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from medical_team.models.shape import GIB

# The GPUs a process (and its children) may use: indices or UUIDs, comma-separated.
CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"


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
    uuid: str | None = None  # `GPU-...`, as CUDA_VISIBLE_DEVICES accepts it (None: not read)


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
    cache_dir: str | None = None  # the compilation caches' folder (medical_team/caches/cache_folder.py)
    cache_free_gib: float | None = None


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
    query = "index,name,driver_version,memory.total,memory.free,compute_cap,uuid"
    listing = _run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"])
    if listing is None or listing.returncode != 0:
        return None, driver_cuda, []
    driver, gpus = None, []
    for line in listing.stdout.strip().splitlines():
        index, name, driver, total_mib, free_mib, cap, uuid = (part.strip() for part in line.split(","))
        gpus.append(GpuFacts(int(index), name, cap, float(total_mib) / 1024, float(free_mib) / 1024, None, None, uuid))
    return driver, driver_cuda, gpus


def nvml_gpus() -> list[GpuFacts]:
    """Every GPU of the host as NVML lists it (no CUDA context: the launcher's view), or [] without NVML."""
    try:
        import pynvml
    except ImportError:
        return []
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return []
    try:
        gpus = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
            name, uuid = (
                _text(value) for value in (pynvml.nvmlDeviceGetName(handle), pynvml.nvmlDeviceGetUUID(handle))
            )
            gpus.append(GpuFacts(index, name, f"{major}.{minor}", memory.total / GIB, memory.free / GIB,
                                 (major, minor) >= (8, 0), None, uuid))  # fmt: skip
        return gpus
    except pynvml.NVMLError:
        return []
    finally:
        pynvml.nvmlShutdown()


def _text(value: str | bytes) -> str:
    """NVML's strings (bytes in older nvidia-ml-py releases) as text."""
    return value.decode() if isinstance(value, bytes) else value


def visible_gpus(gpus: Sequence[GpuFacts], cuda_visible_devices: str | None) -> list[GpuFacts]:
    """The host's GPUs (nvidia-smi's or NVML's listing) that CUDA_VISIBLE_DEVICES leaves visible, in its order.

    Unset: every GPU. Each entry names a GPU by its index (as nvidia-smi numbers them) or its UUID (`GPU-...`, a
    unique prefix is enough); as in CUDA, the list ends at the first entry that names no GPU, and an empty value
    hides them all.
    """
    if cuda_visible_devices is None:
        return list(gpus)
    visible: list[GpuFacts] = []
    for entry in (item.strip() for item in cuda_visible_devices.split(",")):
        named = [gpu for gpu in gpus if entry.isdigit() and gpu.index == int(entry)] or [
            gpu for gpu in gpus if entry.startswith("GPU-") and gpu.uuid is not None and gpu.uuid.startswith(entry)
        ]
        if len(named) != 1 or named[0] in visible:
            break
        visible.append(named[0])
    return visible


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
        uuid = getattr(props, "uuid", None)
        gpus.append(
            GpuFacts(
                index=index,
                name=props.name,
                compute_capability=f"{props.major}.{props.minor}",
                total_vram_gib=total / GIB,
                free_vram_gib=free / GIB,
                bf16=capability >= (8, 0),
                arch_in_torch_build=arch_in_build(capability, arch_list),
                uuid=None if uuid is None else f"GPU-{uuid}",
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
    return HostFacts(
        driver_version=driver,
        driver_cuda=driver_cuda,
        torch_version=torch.__version__,
        torch_cuda=torch.version.cuda,
        torch_arch_list=torch.cuda.get_arch_list() if torch.cuda.is_available() else [],
        cuda_available=bool(torch_gpus),
        cuda_error=cuda_error if smi_gpus or torch.version.cuda else None,
        # torch sees the GPUs CUDA_VISIBLE_DEVICES leaves; nvidia-smi lists all of them
        gpus=torch_gpus or visible_gpus(smi_gpus, os.environ.get(CUDA_VISIBLE_DEVICES)),
        nccl_version=nccl,
        flash_attn=package_facts("flash_attn"),
        vllm=package_facts("vllm"),
        shm_total_gib=shutil.disk_usage(shm).total / GIB if shm.exists() else None,
        checkpoints_dir=str(checkpoints_dir),
        checkpoints_free_gib=shutil.disk_usage(existing_ancestor(checkpoints_dir)).free / GIB,
        cpu_count=len(os.sched_getaffinity(0)),
        ram_total_gib=memory.total / GIB,
        ram_available_gib=memory.available / GIB,
    )


def with_cache_folder(facts: HostFacts, folder: Path) -> HostFacts:
    """The facts with the free disk of the run's compilation caches (its config's `medplay.cache_dir`)."""
    return replace(facts, cache_dir=str(folder), cache_free_gib=shutil.disk_usage(existing_ancestor(folder)).free / GIB)
