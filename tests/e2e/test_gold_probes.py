"""End to end: a model-judged CPU training logs the judge's gold accuracy, and the floor stops it with one line.

    .venv/bin/python -m pytest -q -m e2e tests/e2e/test_gold_probes.py

The judge is the tiny random model of the cpu-smoke profile itself (`hf` backend, in the agent-loop
worker). One gold probe goes with every judged game; the random model never answers in the judge's
format, so every probe is a tie (wrong), and with a floor of 0.5 after 1 probe the run stops after
the first step that judged a game, once that step's metrics are written.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

MEDPLAY = str(Path(sys.executable).with_name("medplay"))
RUN_TIMEOUT_S = 480  # a hang guard, not a speed target
STEPS = 3


def test_gold_accuracy_is_logged_and_its_floor_stops_the_run(tmp_path: Path) -> None:
    subprocess.run([MEDPLAY, "convert", "--output", str(tmp_path / "data")], check=True, capture_output=True)
    run = tmp_path / "run"
    command = [
        "timeout", "--kill-after=30", str(RUN_TIMEOUT_S), MEDPLAY, "train", "profile=cpu-smoke",
        f"medplay.output_dir={run}", f"medplay.data_dir={tmp_path / 'data'}", f"trainer.total_training_steps={STEPS}",
        "trainer.save_freq=-1", "medplay.judge.backend=hf", f"medplay.judge.model={run / 'tiny-qwen3'}",
        "medplay.judge.gold_probe_fraction=1.0", "medplay.judge.gold_accuracy_floor=0.5",
        "medplay.judge.gold_min_count=1",
    ]  # fmt: skip
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    lines = (run / "checkpoints" / "metrics.jsonl").read_text().splitlines()
    steps = {r["step"]: r["data"] for r in map(json.loads, filter(None, lines))}

    assert result.returncode == 1, result.stderr[-4000:]
    last_line = result.stderr.strip().splitlines()[-1]
    assert last_line.startswith("medplay train: stopped: step "), result.stderr[-4000:]
    assert "judge gold accuracy 0.000 over" in last_line and "medplay.judge.gold_accuracy_floor=0.5" in last_line
    stopped_at = max(steps)
    # every step logs the running count; the step that stopped the run logged its accuracy first
    assert all("judge/gold_count" in data for data in steps.values())
    assert steps[stopped_at]["judge/gold_accuracy"] == 0.0 and steps[stopped_at]["judge/gold_count"] >= 1
    assert steps[stopped_at]["judge/calls"] > 0 and steps[stopped_at]["judge/parse_error_rate"] > 0
