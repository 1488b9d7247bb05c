"""scripts/gpu_kit.py's command line as scripts/gpu_kit.sh calls it, without a training run (those: tests/e2e/).

Every subcommand is in its --help, `games` among them (the learn phase's note); a training phase whose policy was
not prepared answers with its summary and the reason.
Run: PYTHONPATH=tests .venv/bin/python -m pytest -q tests/test_gpu_kit_script.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "gpu_kit.py"


def gpu_kit(*args: str) -> subprocess.CompletedProcess[str]:
    """scripts/gpu_kit.py in this Python."""
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, check=False, timeout=120)


def test_help_names_every_subcommand_games_included() -> None:
    result = gpu_kit("--help")
    assert result.returncode == 0, result.stderr
    for command in ("prepare", "fit", "fit48", "fit24", "bench", "games"):
        assert f"    {command} " in result.stdout, result.stdout
    games = gpu_kit("games", "--help")
    assert games.returncode == 0 and "LADDER_DIR" in games.stdout


def test_games_counts_the_steps_and_games_each_rl_rung_trained(tmp_path: Path) -> None:
    metrics = tmp_path / "rl" / "checkpoints" / "metrics.jsonl"
    metrics.parent.mkdir(parents=True)
    records = [(0, {"val/score": 0.1}), (1, {"game/games": 4.0}), (2, {"game/games": 6.0}), (2, {"val/score": 0.2})]
    metrics.write_text("".join(json.dumps({"step": step, "data": data}) + "\n" for step, data in records))
    result = gpu_kit("games", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "rl: 2 steps, 10 games trained on\n"
    assert gpu_kit("games", str(tmp_path / "none")).stdout == "no RL rung logged a step\n"


def test_a_training_phase_without_a_prepared_policy_answers_with_its_summary(tmp_path: Path) -> None:
    # Through the shell script, as on a GPU machine: its options reach the phase's own parser.
    env = {**os.environ, "WORK": str(tmp_path / "work"), "PYTHON": sys.executable, "LIMIT_S": "60"}
    out = tmp_path / "out"
    command = ["bash", str(REPO / "scripts" / "gpu_kit.sh"), "--cpu", "--out", str(out), "bench", "stock"]
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["phase"] == "bench" and summary["cpu"] is True and summary["exit_status"] == 1
    assert "run the prepare phase first" in summary["error"]
    assert result.stdout.startswith("gpu_kit bench (cpu): exit 1")
