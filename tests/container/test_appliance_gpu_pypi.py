"""The gpu-pypi image (`make build GPU_BASE=pypi`) installs exactly the `full` wheelhouse's wheels, checked without a
network or an engine: the Makefile builds that wheelhouse from the same lock, the Dockerfile's install step turns
its SHA256SUMS into the install list (run here on a wheelhouse written from the dry plan), and what the flavour
leaves out (flash-attn) is what the image says it runs without (sdpa). The built image's `pip freeze` against the
wheelhouse's manifest is tests/container/test_appliance_image_gpu.py (`make test-image IMAGE_FLAVOUR=gpu GPU_BASE=pypi`).

Run: .venv/bin/python -m pytest -q tests/container/test_appliance_gpu_pypi.py
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

from appliance_harness import REPO
from test_appliance_dockerfile import instructions
from test_appliance_wheelhouse import wheelhouse_plan

DOCKERFILE = (REPO / "Dockerfile").read_text()
SCRIPT = REPO / "scripts" / "wheelhouse.py"


def stage(name: str) -> str:
    """The Dockerfile's text of stage `name` (from its FROM line to the next FROM)."""
    match = re.search(
        rf"^FROM \S+ AS {re.escape(name)}\n(.*?)(?=^FROM |\Z)", DOCKERFILE, flags=re.MULTILINE | re.DOTALL
    )
    assert match, f"no stage {name}"
    return re.sub(r"\\\n\s*", " ", match.group(1))


def make_dry_run(*arguments: str) -> str:
    return subprocess.run(
        ["make", "-n", *arguments], cwd=REPO, capture_output=True, text=True, check=True, timeout=60
    ).stdout


def test_make_build_gpu_base_pypi_builds_the_full_wheelhouse_and_passes_the_ubuntu_base():
    # A fresh tree has no wheelhouse: make's dry run shows the rule that builds it (-B: as if nothing were built).
    dry_run = make_dry_run("-B", "build", "GPU_BASE=pypi", "DOCKER=podman")
    assert "scripts/wheelhouse.py --flavour full --output build/wheelhouse" in dry_run
    assert "docker/stack.sh build-args gpu-pypi" in dry_run
    assert "docker/os-base.sh noble" in dry_run
    tag = subprocess.run([REPO / "docker" / "stack.sh", "tag", "gpu-pypi"], capture_output=True, text=True,
                         check=True).stdout.strip()  # fmt: skip
    assert tag.endswith("-cu130-py3.12-pypi")
    assert f"-t medplay:{tag} -t medplay:latest" in dry_run
    # The default GPU route is unchanged: the CUDA base, no wheelhouse.
    default = make_dry_run("-B", "build", "DOCKER=podman")
    assert "docker/stack.sh build-args gpu " in default + " " and "wheelhouse.py" not in default


def test_the_pypi_stage_installs_the_wheelhouse_that_make_builds_and_nothing_from_an_index():
    text = stage("stack-gpu-pypi")
    (mount,) = re.findall(r"--mount=type=bind,source=(\S+),target=/wheelhouse", text)
    wheelhouse_rule = re.search(r"^WHEELHOUSE_FULL := (\S+)$", (REPO / "Makefile").read_text(), flags=re.MULTILINE)
    assert wheelhouse_rule.group(1) == f"{mount}/SHA256SUMS"
    assert f"!{mount}/" in (REPO / ".dockerignore").read_text().splitlines()
    assert "sha256sum --quiet --strict -c" in text
    assert "xargs pip install --no-index --no-deps" in text
    assert "pip install -r" not in text and "requirements-gpu.lock" not in text
    build_args = subprocess.run([REPO / "docker" / "stack.sh", "build-args", "gpu-pypi"], capture_output=True,
                                text=True, check=True).stdout.split()  # fmt: skip
    # The project goes on last, from its source, against nothing but what the wheelhouse installed.
    assert "PROJECT_PIP_OPTIONS=--no-deps,--no-index,--no-build-isolation" in build_args
    assert "FLAVOUR=gpu-pypi" in build_args


def install_list_of_the_dockerfile(sha256sums: str) -> list[str]:
    """The wheel files the stage's install command passes to pip, for this SHA256SUMS (the command run in bash)."""
    command = re.search(r"&& (grep -v ' medical_team-' /wheelhouse/SHA256SUMS .*?)\| xargs", stage("stack-gpu-pypi"))
    assert command, "the install list's command"
    script = command.group(1).replace("/wheelhouse/SHA256SUMS", "/dev/stdin")
    listed = subprocess.run(["bash", "-o", "pipefail", "-c", script], input=sha256sums, capture_output=True,
                            text=True, check=True).stdout.split()  # fmt: skip
    assert all(path.startswith("/wheelhouse/wheels/") for path in listed)
    return [path.removeprefix("/wheelhouse/wheels/") for path in listed]


def test_the_image_installs_every_wheel_of_the_full_wheelhouse_but_the_projects_own(tmp_path):
    subprocess.run([sys.executable, SCRIPT, "--flavour", "full", "--dry", "--output", tmp_path], check=True,
                   capture_output=True, timeout=60)  # fmt: skip
    plan = json.loads((tmp_path / "full" / "manifest.json").read_text())
    # The wheelhouse's files as a real build names them: every carried lock pin, the project, and a dependency.
    files = [f"{root['name'].replace('-', '_')}-{root['version']}-py3-none-any.whl" for root in plan["roots"]]
    files += ["medical_team-0.1.0-py3-none-any.whl", "nvidia_cublas-13.1.0.3-py3-none-manylinux_2_27_x86_64.whl"]
    sha256sums = "".join(f"{index:064x}  {name}\n" for index, name in enumerate(files))

    installed = install_list_of_the_dockerfile(sha256sums)

    assert installed == [name for name in files if not name.startswith("medical_team-")]
    assert {root["name"] for root in plan["roots"]} >= {"torch", "vllm", "verl", "ray", "transformers"}


def test_what_the_full_wheelhouse_leaves_out_the_image_runs_without():
    assert set(wheelhouse_plan.LEFT_OUT["full"]) == {"flash-attn"}
    assert "flash-attn" not in stage("stack-gpu-pypi").replace("No flash-attn", "")
    environment = " ".join(instructions("ENV"))
    assert "MEDPLAY_ATTENTION=sdpa" in environment
    # Only that stage sets it: the CUDA route compiles flash-attn and keeps verl's flash_attention_2.
    assert "MEDPLAY_ATTENTION" in stage("stack-gpu-pypi") and "MEDPLAY_ATTENTION" not in stage("stack-gpu")
