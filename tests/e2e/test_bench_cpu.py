"""End to end: `make bench`'s two step runs (`medplay bench step`), self-play and verl's stock single-turn step, at 3 steps.

    PYTHONPATH=$PWD:tests .venv/bin/python -m pytest -q -m e2e tests/e2e/test_bench_cpu.py

Both runs must finish and the comparison's ratios must be numbers: the stock run once died at its first step
(verl's single-turn agent loop scores through reward workers, and cpu-smoke started none), and `make bench`
wrote a JSON of null ratios that nothing read. The served-judge run is left out (`--no-served-judge`); what the
figures are is docs/benchmarks.md's business, not this test's.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest
from cpu_smoke import train_timeout_s

from medical_team.bench.commands import medplay_here

STEPS = 3
# Two training runs, one after the other, each under its hang guard; then the GPU section's torch import.
pytestmark = [pytest.mark.e2e, pytest.mark.long, pytest.mark.timeout(2 * train_timeout_s(STEPS) + 300)]

REPO = Path(__file__).resolve().parents[2]
RATIOS = (
    "ratio_per_generated_token_selfplay_over_stock",
    "ratio_per_trained_token_selfplay_over_stock",
    "step_time_ratio_selfplay_over_stock",
)


def test_both_step_runs_finish_and_every_ratio_is_a_number(tmp_path: Path) -> None:
    output = tmp_path / "bench.json"
    command = medplay_here(
        "bench", "step",
        *("--steps", str(STEPS), "--skip", "1", "--no-served-judge"),
        *("--work", str(tmp_path / "work"), "--output", str(output), "--timeout", str(train_timeout_s(STEPS))),
    )  # fmt: skip
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)

    assert output.is_file(), f"{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    report = json.loads(output.read_text())
    logs = {name: report[name]["log"] for name in ("selfplay", "stock_grpo")}
    assert result.returncode == 0, f"{result.stdout[-2000:]}\n{result.stderr[-4000:]}\nlogs: {logs}"
    for name in ("selfplay", "stock_grpo"):
        run = report[name]
        assert run["returncode"] == 0 and run["steps_logged"] == STEPS, (name, run)
        assert run["steps_measured"] == [2, 3], (name, run)
        assert run["step_s"] > 0 and run["response_length_mean"] > 0, (name, run)
    for key in RATIOS:
        value = report[key]
        assert isinstance(value, float) and math.isfinite(value) and value > 0, (key, value)
    assert isinstance(report["meets_target"], bool)
    assert report["served_judge"] == {"what": "not run (--no-served-judge)"}
