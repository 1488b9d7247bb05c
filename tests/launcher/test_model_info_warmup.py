"""The rollout's model-class inspection done ahead (medical_team/launcher/model_info_warmup.py), with the real vLLM.

The check that vLLM then inspects nothing itself builds vLLM's model config in a fresh process whose inspection
subprocess is replaced by one that fails: it passes only when vLLM found the warm-up's answer in its cache folder
(a contact with vLLM internals listed in docs/verl-integration.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from medical_team.launcher.model_info_warmup import model_info_warmed, warmup_command
from medical_team.models.tiny import build_tiny_model

VLLM_TIMEOUT_S = 300
# vLLM's model config of argv[1], with the class inspection's subprocess made to fail.
INSPECTS_NOTHING = """
import sys
from vllm.model_executor.models import registry
assert callable(registry._run_in_subprocess), "vLLM no longer inspects model classes in a subprocess"
def no_subprocess(fn):
    raise SystemExit("vLLM inspected the model class itself")
registry._run_in_subprocess = no_subprocess
from vllm.config import ModelConfig
print(ModelConfig(model=sys.argv[1]).architecture)
"""


def vllm_inspects_nothing(model: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Build vLLM's model config of `model` in a fresh process that may not inspect the class itself."""
    return subprocess.run(
        [sys.executable, "-c", INSPECTS_NOTHING, str(model)],
        check=False, env=env, capture_output=True, text=True, timeout=VLLM_TIMEOUT_S,
    )  # fmt: skip


@pytest.mark.slow
def test_after_the_warmup_vllm_reads_the_model_class_from_its_cache(tmp_path: Path) -> None:
    model = build_tiny_model(tmp_path / "tiny-qwen3")
    env = {**os.environ, "VLLM_CACHE_ROOT": str(tmp_path / "vllm")}
    subprocess.run(warmup_command(model), env=env, check=True, capture_output=True, timeout=VLLM_TIMEOUT_S)
    assert [path.name for path in (tmp_path / "vllm" / "modelinfos").iterdir()] == [
        "vllm-model_executor-models-qwen3-Qwen3ForCausalLM.json"
    ]

    after = vllm_inspects_nothing(model, env)
    assert after.returncode == 0, after.stderr[-2000:]
    assert after.stdout.strip().endswith("Qwen3ForCausalLM")


def test_a_warmup_still_running_when_the_run_ends_is_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = build_tiny_model(tmp_path / "tiny-qwen3")
    monkeypatch.setenv("VLLM_CACHE_ROOT", str(tmp_path / "vllm"))
    with model_info_warmed(model, tmp_path / "run.log") as process:
        assert process is not None and process.poll() is None  # importing vLLM for seconds yet
    assert process.returncode is not None


def test_a_cache_folder_that_inspected_the_class_before_gets_no_warmup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = build_tiny_model(tmp_path / "tiny-qwen3")
    monkeypatch.setenv("VLLM_CACHE_ROOT", str(tmp_path / "vllm"))
    (tmp_path / "vllm" / "modelinfos").mkdir(parents=True)
    (tmp_path / "vllm" / "modelinfos" / "vllm-model_executor-models-llama-LlamaForCausalLM.json").write_text("{}")
    with model_info_warmed(model, tmp_path / "run.log") as process:
        assert process is not None  # another class's answer does not count
    (tmp_path / "vllm" / "modelinfos" / "vllm-model_executor-models-qwen3-Qwen3ForCausalLM.json").write_text("{}")
    with model_info_warmed(model, tmp_path / "run.log") as process:
        assert process is None


def test_a_model_that_is_no_local_folder_is_left_to_vllm(tmp_path: Path) -> None:
    with model_info_warmed(Path("Qwen/Qwen3-4B"), tmp_path / "run.log") as process:
        assert process is None
    assert not (tmp_path / "run.log").exists()
