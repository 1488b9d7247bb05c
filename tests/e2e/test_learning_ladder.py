"""End to end: the GPU kit's learning run on the CPU (`scripts/gpu_kit.sh --cpu learn sft`, `learn rl`, `learn selfplay`).

    .venv/bin/python -m pytest -q -m e2e tests/e2e/test_learning_ladder.py

The kit runs `scripts/learning_ladder.sh tiny` with the tiny model: the same parts as the gpu scale (SFT, RL on
ground truth with groups, self-play with groups, each RL trainer scoring the same benchmark notes greedily in its
validation, `medplay eval --responses`, `medplay compare`, `medplay report`) under the same time budget, at sizes
that only check the plumbing, so a GPU run cannot fail on a typo. What the rungs learn is
docs/results/ladder-cpu.md's and ladder-gpu.md's job.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cpu_smoke import TRAIN_TIMEOUT_S
from PIL import Image
from spec_names import GAME_PLOT_LABELS, MONITOR_PLOT_LABELS

from medical_team.evaluate.metrics_log import read_metrics

# Three kit calls in the module's fixture (setup counts in the first test's limit): more than pytest's default 900 s.
pytestmark = [pytest.mark.e2e, pytest.mark.long, pytest.mark.timeout(2 * TRAIN_TIMEOUT_S + 660)]

REPO = Path(__file__).resolve().parents[2]
# What a self-play run logs, so what its report draws: every series of docs/game.md and collapse monitor, and
# verl's timers except `reward` (the agent loop scores training games itself); `testing` is the benchmark's
# validation after the last step.
REPORTED = {
    **GAME_PLOT_LABELS,
    **MONITOR_PLOT_LABELS,
    "step_time": [
        "step", "gen", "old_log_prob", "ref", "adv", "update_actor", "update_weights", "save_checkpoint", "testing"
    ],
}  # fmt: skip
# The calls' parts in order (`learn` alone runs the first two calls' parts in one; `learn selfplay` compares every
# rung evaluated, scoring only the validation not scored before).
PARTS = ("convert", "sft", "rl", "score-sft", "score-rl", "compare", "selfplay", "score-selfplay", "compare")
# Each call's limit: generous, so that the budget never stops the 2-step rungs on a slow machine (the steps are
# asserted), while the budget arithmetic still runs.
LIMIT_S = 3 * TRAIN_TIMEOUT_S
MAX_FILES = 8  # what the device tool brings back from a call


@pytest.fixture(scope="module")
def kit_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("learn")
    env = {**os.environ, "WORK": str(root / "work"), "LIMIT_S": str(LIMIT_S), "PYTHON": sys.executable}
    for call, args in (("out-sft", ["learn", "sft"]), ("out-rl", ["learn", "rl"]), ("out-selfplay", ["learn", "selfplay"])):
        result = subprocess.run(
            [str(REPO / "scripts/gpu_kit.sh"), "--cpu", "--out", str(root / call), *args],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=LIMIT_S + 60,
            check=False,
        )
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return root


@pytest.fixture(scope="module")
def ladder(kit_runs: Path) -> Path:
    return kit_runs / "work" / "ladder"


def test_every_part_ran_and_was_timed(ladder: Path) -> None:
    times = [line.split("\t") for line in (ladder / "times.tsv").read_text().splitlines()]
    assert [name for name, _, _ in times if not name.startswith("report-")] == list(PARTS)
    assert all(code == "0" for _, _, code in times)


def test_each_call_answers_with_its_summary_and_at_most_eight_files(kit_runs: Path) -> None:
    for call, trained in (
        ("out-sft", "no RL rung logged a step"),
        ("out-rl", "rl: 2 steps, 8 games trained on"),
        ("out-selfplay", "selfplay: 2 steps"),
    ):
        files = sorted(path.name for path in (kit_runs / call).iterdir())
        assert len(files) <= MAX_FILES and {"summary.json", "learn-files.tar.gz", "times.tsv"} <= set(files)
        assert (call == "out-sft") != ("ladder.md" in files)  # the comparison comes with a trained rung
        summary = json.loads((kit_runs / call / "summary.json").read_text())
        assert summary["phase"] == "learn" and summary["exit_status"] == 0
        assert trained in summary["note"]


def test_the_ladder_compares_three_rungs_on_the_same_notes(ladder: Path) -> None:
    result = json.loads((ladder / "ladder.json").read_text())
    assert [rung["name"] for rung in result["rungs"]] == ["sft", "rl", "selfplay"]
    assert {rung["notes"] for rung in result["rungs"]} == {4}
    assert [(p["first"], p["second"]) for p in result["paired"]] == [
        ("sft", "rl"),
        ("rl", "selfplay"),
        ("sft", "selfplay"),
    ]
    assert "| selfplay | 4 |" in (ladder / "ladder.md").read_text()


def test_the_rungs_were_scored_by_their_trainers_validation(ladder: Path) -> None:
    for rung, steps in (("rl", ["step_0", "step_2"]), ("selfplay", ["step_2"])):
        folders = sorted(path.name for path in (ladder / rung / "validation").iterdir())
        assert folders == steps
        for folder in folders:
            result = json.loads((ladder / rung / "validation" / folder / "eval.json").read_text())
            assert (result["backend"], result["step"], result["notes"]) == ("verl validation", int(folder[5:]), 4)
            assert result["generation"]["decoding"] == "greedy"


def test_rl_rungs_trained_in_groups(ladder: Path) -> None:
    for rung in ("rl", "selfplay"):
        lines = (ladder / rung / "checkpoints" / "metrics.jsonl").read_text().splitlines()
        steps = {record["step"]: record["data"] for record in map(json.loads, lines)}
        assert sorted(steps) == ([0, 1, 2] if rung == "rl" else [1, 2])  # step 0: the validation before training
        for step, data in steps.items():
            if step == 0:
                continue
            games = {key.removeprefix("game/count/"): n for key, n in data.items() if key.startswith("game/count/")}
            assert sum(games.values()) == 4  # two seed rows, two games each
            adversarial = games["adversarial_harmful"] + games["adversarial_benign"]
            assert (adversarial > 0) == (rung == "selfplay")  # the ground-truth rung plays vanilla games only
        assert (ladder / f"report-{rung}" / "report.md").is_file()


def test_the_self_play_report_draws_every_plot_from_the_real_runs_metrics(ladder: Path) -> None:
    history = read_metrics(ladder / "selfplay" / "checkpoints" / "metrics.jsonl")
    assert history.steps == [1, 2] and history.replaced_steps == 0
    assert "wrote 12 of 12 plots" in (ladder / "logs" / "report-selfplay.log").read_text()
    report = ladder / "report-selfplay"
    page = (report / "report.md").read_text()
    for name, labels in REPORTED.items():
        with Image.open(report / f"{name}.png") as image:
            assert image.format == "PNG" and image.width > 100 and image.height > 100
            assert sum(1 for count in image.convert("L").histogram() if count) > 10
        assert f"]({name}.png)" in page
        assert f"Series: {', '.join(labels)}." in page
