"""End to end: the judge server dies mid-run; games become counted ties, then training stops with a message.

    .venv/bin/python -m pytest -q -m e2e tests/e2e/test_judge_outage.py

A real `medplay judge serve` on a loopback port judges a cpu-smoke training; it is stopped after step 1.
The failure limit (5 batches) exceeds the games in one step (4), so at least one step logs its ties
before the limit is reached and `medplay train` exits 1 naming the judge.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cpu_smoke import MEDPLAY
from held_runs import judge_server

pytestmark = [pytest.mark.e2e, pytest.mark.long]

FAILURE_LIMIT = 5
RUN_TIMEOUT_S = 600  # a hang guard, not a speed target


def logged_steps(metrics_file: Path) -> dict[int, dict[str, float]]:
    """The metrics file's records by step (the last record of a step wins)."""
    if not metrics_file.exists():
        return {}
    return {r["step"]: r["data"] for r in map(json.loads, filter(None, metrics_file.read_text().splitlines()))}


def wait_until(condition, timeout_s: float, what: str) -> None:
    """Poll `condition` until it holds, failing the test with `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_a_dead_judge_gives_counted_ties_then_stops_the_run(tmp_path: Path) -> None:
    subprocess.run([MEDPLAY, "convert", "--output", str(tmp_path / "data")], check=True, capture_output=True)
    metrics_file = tmp_path / "run" / "checkpoints" / "metrics.jsonl"
    with judge_server() as (judge, url):
        command = [
            "timeout", "--kill-after=30", str(RUN_TIMEOUT_S), MEDPLAY, "train", "profile=cpu-smoke",
            f"medplay.output_dir={tmp_path / 'run'}", f"medplay.data_dir={tmp_path / 'data'}",
            "trainer.total_training_steps=12", "medplay.judge.backend=http", f"medplay.judge.url={url}",
            "medplay.judge.attempts=2", f"medplay.judge.max_consecutive_failures={FAILURE_LIMIT}",
            "medplay.watchdog.max_restarts=0",  # the outage's own exit, not the watchdog's restarts (tests/watchdog/)
        ]  # fmt: skip
        train = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: 1 in logged_steps(metrics_file) or train.poll() is not None, RUN_TIMEOUT_S, "step 1")
        judge.send_signal(signal.SIGTERM)
        judge.wait(timeout=60)
        _, stderr = train.communicate(timeout=RUN_TIMEOUT_S)

    steps = logged_steps(metrics_file)
    assert train.returncode == 1, stderr[-4000:]
    assert stderr.strip().splitlines()[-1].startswith(
        f"medplay train: stopped: judge at {url} failed {FAILURE_LIMIT} consecutive batches"
    ), stderr[-4000:]
    assert steps[1]["game/tie_rate"] == 0.0 and steps[1]["judge/calls"] > 0
    tied_steps = [step for step, data in steps.items() if data["game/tie_rate"] > 0]
    assert tied_steps, f"no step reported ties: { {s: d['game/tie_rate'] for s, d in steps.items()} }"
    assert max(steps) < 12, "the run trained to the end on ties"
