"""End to end: a real CPU training that stops moving for a reason outside the run, or every time, meets its watchdog.

    .venv/bin/python -m pytest -q -m e2e tests/e2e/test_watchdog_cpu.py

Runs of `medplay train profile=cpu-smoke` held in one phase through the tests' phase hold (`MEDPLAY_INJECT_HOLD`,
medical_team/run/phase_hold.py), which writes a file once the process is inside the phase:
- the judge server (`medplay judge serve`, outside the run) is SIGSTOPped after step 1: it still accepts connections
  (the kernel's backlog) and never replies, so step 2's games wait on it; the stall is seen within its limit plus a
  poll, said half way with what the run waits for, recorded with the stacks of every process, and the run restarted
  to its last step with every step once in `metrics.jsonl`;
- a hold that comes back at the same step in every attempt ends the run after `max_restarts` with exit status 7.
Each needs a run of its own (a judge server; a run that ends by design); the faults inside a run share one
(tests/e2e/test_faults_cpu.py). `long`: each run starts verl twice (docs/testing.md).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from cpu_smoke import MEDPLAY, convert, metrics_by_step, train_timeout_s
from held_runs import (
    assert_every_process_recorded,
    finish,
    hang_records,
    stacks_of,
    start,
    wait_for_held,
    wait_for_restarts,
)
from watchdog_limits import SEEN_WITHIN_S

from medical_team.launcher.judge.served_judge_plan import free_port
from medical_team.run.failures import REPEATED_FAILURE_EXIT

pytestmark = [pytest.mark.e2e, pytest.mark.long]

STEPS = 3
STARTS = 3  # three starts of verl at most


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled MEDEC data as verl parquet files, converted once for every run."""
    folder = tmp_path_factory.mktemp("watchdog-data") / "data"
    convert(folder)
    return folder


def test_a_hang_that_comes_back_every_time_ends_with_its_own_status(tmp_path: Path, data_dir: Path) -> None:
    """The first update of every attempt holds (nothing releases it): the same step stalls twice, then the end."""
    run = start(
        tmp_path,
        data_dir,
        f"update_actor@1:{tmp_path / 'held'}:{tmp_path / 'never'}",
        STEPS,
        STARTS,
        "medplay.watchdog.max_restarts=1",
    )
    status, err = finish(run, tmp_path, train_timeout_s(STEPS) * STARTS)
    assert status == REPEATED_FAILURE_EXIT, err[-5000:]
    assert len(list((tmp_path / "hangs").iterdir())) == 2  # max_restarts=1: two attempts
    last = err.strip().splitlines()[-1]
    assert "1 restart(s) in a row did not move the run past no checkpoint" in last
    assert "it keeps stopping in update" in last
    assert not (tmp_path / "checkpoints" / "metrics.jsonl").exists() or not metrics_by_step(tmp_path)


def test_a_judge_that_accepts_and_never_replies_is_seen_and_the_run_restarted(tmp_path: Path, data_dir: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    judge = subprocess.Popen(
        [MEDPLAY, "judge", "serve", "--port", url.rsplit(":", 1)[1]],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    held, release = tmp_path / "held", tmp_path / "release"
    try:
        deadline = time.monotonic() + 120
        while not _answers(url):
            assert judge.poll() is None and time.monotonic() < deadline, "the judge server did not start"
            time.sleep(0.5)
        run = start(
            tmp_path, data_dir, f"advantage@1:{held}:{release}", STEPS, STARTS, "medplay.watchdog.max_restarts=1",
            "medplay.judge.backend=http", f"medplay.judge.url={url}", "medplay.judge.timeout_s=900",
        )  # fmt: skip
        try:
            wait_for_held(held, run, tmp_path, STEPS)  # step 1's games are judged: step 2's will wait on the judge
            judge.send_signal(signal.SIGSTOP)
            release.touch()
            wait_for_restarts(1, run, tmp_path, STEPS)
            judge.send_signal(signal.SIGCONT)  # the next attempt finds it answering
        finally:
            status, err = finish(run, tmp_path, train_timeout_s(STEPS) * STARTS)
    finally:
        judge.kill()
    assert status == 0, err[-5000:]
    lines = (tmp_path / "checkpoints" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [1, 2, 3]  # every step once across the restart
    ((key, (record, stall)),) = hang_records(tmp_path).items()
    assert key == ("generation", 2, 1)
    assert stall["limit_s"] <= stall["seconds"] <= stall["limit_s"] + SEEN_WITHIN_S
    assert_every_process_recorded(record, stall)
    assert "call_judge" in stacks_of(record, "agent_loop_worker")  # a game's thread, waiting on the judge
    assert "step 2 has been in generation for" in err and "waiting for the agent-loop workers' games" in err


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False
