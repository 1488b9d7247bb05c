"""End to end: a plain-notes run whose judge server dies mid-run; games become counted ties, then training stops.

    .venv/bin/python -m pytest -q -m e2e tests/e2e/test_judge_outage.py

One module-wide run, asserted on by every test here:
- A 20-note plain CSV (no labels, sequential ids n1..n20, each its own case) converts with `medplay convert --notes` in
  its own process; the run trains on its train.parquet, where every game is adversarial_benign (the attacker injects
  an error into the note, the judge settles the truth), and both roles train.
- A real `medplay judge serve` on a loopback port judges that cpu-smoke training; it is stopped after step 1. The
  failure limit (5 batches) exceeds the games in one step (4), so at least one step logs its ties before the limit
  is reached and `medplay train` exits 1 naming the judge. The ties are kept (`medplay.rewards.remove_ties=false`):
  every game of a plain note needs the judge, so with ties dropped a step of the outage has no sample left and the
  run stops at step 2 for that (`AllTiesError`, "nothing to train on"), before the judge's limit.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from cpu_smoke import MEDPLAY
from held_runs import judge_server, wait_until
from plain_notes_files import write_plain_csv

from medical_team.reliability.checkpoints import COMPLETE_MARKER
from medical_team.run_folder.checkpoint_folder import read_tracker

pytestmark = [pytest.mark.e2e, pytest.mark.long]

NOTES = 20
FAILURE_LIMIT = 5
STEPS = 12  # more than the outage lets it train
RUN_TIMEOUT_S = 600  # a hang guard, not a speed target


@dataclass(frozen=True)
class Outage:
    """The run's folder, the judge's URL, the run's exit status and stderr, and its metrics by step."""

    root: Path
    url: str
    status: int
    stderr: str
    steps: dict[int, dict[str, float]]


def logged_steps(metrics_file: Path) -> dict[int, dict[str, float]]:
    """The metrics file's records by step (the last record of a step wins)."""
    if not metrics_file.exists():
        return {}
    return {r["step"]: r["data"] for r in map(json.loads, filter(None, metrics_file.read_text().splitlines()))}


@pytest.fixture(scope="module")
def outage(tmp_path_factory: pytest.TempPathFactory) -> Outage:
    """Convert the plain notes, train on them judged by a served judge, and stop the judge once step 1 is logged."""
    root = tmp_path_factory.mktemp("judge-outage")
    notes = write_plain_csv(root / "notes.csv", NOTES)
    converted = subprocess.run(
        [MEDPLAY, "convert", "--notes", str(notes), "--output", str(root / "data")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert converted.returncode == 0, converted.stderr
    metrics_file = root / "run" / "checkpoints" / "metrics.jsonl"
    with judge_server() as (judge, url):
        command = [
            "timeout", "--kill-after=30", str(RUN_TIMEOUT_S), MEDPLAY, "train", "profile=cpu-smoke",
            f"medplay.output_dir={root / 'run'}", f"medplay.data_dir={root / 'data'}",
            f"trainer.total_training_steps={STEPS}", "medplay.judge.backend=http", f"medplay.judge.url={url}",
            "medplay.judge.attempts=2", f"medplay.judge.max_consecutive_failures={FAILURE_LIMIT}",
            "medplay.rewards.remove_ties=false",  # a step of ties still trains, until the judge's limit
            "medplay.watchdog.max_restarts=0",  # the outage's own exit, not the watchdog's restarts (tests/watchdog/)
        ]  # fmt: skip
        with (root / "stdout.txt").open("w") as out, (root / "stderr.txt").open("w") as err:
            train = subprocess.Popen(command, cwd=root, stdout=out, stderr=err)
        wait_until(lambda: 1 in logged_steps(metrics_file), train, root, "step 1 logged", RUN_TIMEOUT_S)
        judge.send_signal(signal.SIGTERM)
        judge.wait(timeout=60)
        train.wait(timeout=RUN_TIMEOUT_S)
    return Outage(root, url, train.returncode, (root / "stderr.txt").read_text(), logged_steps(metrics_file))


def test_the_plain_notes_convert_into_one_case_and_one_adversarial_benign_seed_each(outage: Outage) -> None:
    report = json.loads((outage.root / "data" / "dataset_report.json").read_text(encoding="utf-8"))
    assert report["seeds"]["by_category"]["adversarial_benign"]["total"] == NOTES
    assert report["splits"]["train"]["case_groups"] + report["splits"]["val"]["case_groups"] == NOTES


def test_step_1_plays_only_adversarial_benign_games_and_trains_both_roles(outage: Outage) -> None:
    data = outage.steps[1]
    assert data["game/count/adversarial_benign"] > 0, data
    assert all(data[f"game/count/{category}"] == 0 for category in ("vanilla_harmful", "vanilla_benign")), data
    assert data["game/count/adversarial_harmful"] == 0, data
    assert data["samples/attacker"] > 0 and data["samples/assessor"] > 0, data
    checkpoints = outage.root / "run" / "checkpoints"
    tracked = read_tracker(checkpoints)
    assert tracked is not None and tracked >= 1
    assert (checkpoints / f"global_step_{tracked}" / COMPLETE_MARKER).is_file()


def test_a_dead_judge_gives_counted_ties_then_stops_the_run(outage: Outage) -> None:
    steps, stderr = outage.steps, outage.stderr
    assert outage.status == 1, stderr[-4000:]
    # A step's games are judged together, so the count may pass the limit by the batches still in flight.
    stopped = re.match(
        rf"medplay train: stopped: judge at {re.escape(outage.url)} failed (\d+) consecutive batches: ",
        stderr.strip().splitlines()[-1],
    )
    assert stopped is not None and int(stopped.group(1)) >= FAILURE_LIMIT, stderr[-4000:]
    assert steps[1]["game/tie_rate"] == 0.0 and steps[1]["judge/calls"] > 0
    tied_steps = [step for step, data in steps.items() if data["game/tie_rate"] > 0]
    assert tied_steps, f"no step reported ties: { {s: d['game/tie_rate'] for s, d in steps.items()} }"
    assert max(steps) < STEPS, "the run trained to the end on ties"
