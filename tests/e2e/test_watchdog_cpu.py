"""End to end: a real CPU training that stops moving is seen by its watchdog, recorded and restarted to its last step.

    .venv/bin/python -m pytest -q -m e2e tests/e2e/test_watchdog_cpu.py

Runs of `medplay train profile=cpu-smoke`, each held in one phase through the tests' step hold
(`MEDPLAY_INJECT_HOLD`, medical_team/plugin/step_hold.py), which writes a file once the process is inside the phase:
- the FSDP worker is SIGSTOPped inside step 2's update;
- the rollout's vLLM engine core (`VLLM::EngineCore`, which runs vLLM's worker in its own process on CPU) is SIGSTOPped
  while the rollout server serves a generation request;
- the judge server (`medplay judge serve`, outside the run) is SIGSTOPped after step 1: it still accepts connections
  (the kernel's backlog) and never replies, so step 2's games wait on it;
- the trainer's own reward computation (its `advantage` phase, in the task runner's process) sleeps in step 2;
each is seen within its limit plus a poll, said half way to its limit with what the run waits for, leaves a record
with the stacks of every process of the run, is stopped and restarted from its verified checkpoint, and the run
reaches its last step with every step once in `metrics.jsonl`. A hold that comes back at the same step in every
attempt ends the run after `max_restarts` with exit status 7. `long`: each run starts verl twice (about 6 minutes
on 2 cores; docs/testing.md).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import psutil
import pytest
from cpu_smoke import MEDPLAY, convert, metrics_by_step, train_command, train_timeout_s
from watchdog_limits import SEEN_WITHIN_S, WATCHDOG

from medical_team.launcher.judge.served_judge_plan import free_port
from medical_team.run.failures import REPEATED_FAILURE_EXIT
from medical_team.run.phase_hold import HOLD_ENV
from medical_team.run.watchdog_files import EVENTS_NAME, WATCHDOG_FOLDER

pytestmark = [pytest.mark.e2e, pytest.mark.long]

STEPS = 3


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled MEDEC data as verl parquet files, converted once for every run."""
    folder = tmp_path_factory.mktemp("watchdog-data") / "data"
    convert(folder)
    return folder


def start(root: Path, data_dir: Path, hold: str, *overrides: str) -> subprocess.Popen:
    """`medplay train` into `root` with the step hold `hold` (PHASE@N:HELD:RELEASE) and the test's limits."""
    (root / "data").symlink_to(data_dir)
    command = train_command(
        root, STEPS, *WATCHDOG, f"+ray_kwargs.ray_init.runtime_env.env_vars.{HOLD_ENV}={hold}", *overrides
    )
    command[2] = str(train_timeout_s(STEPS) * 3)  # three starts of verl at most
    with (root / "stdout.txt").open("w") as out, (root / "stderr.txt").open("w") as err:
        return subprocess.Popen(command, cwd=root, stdout=out, stderr=err, start_new_session=True)


def wait_for_file(path: Path, run: subprocess.Popen, root: Path) -> str:
    deadline = time.monotonic() + train_timeout_s(STEPS)
    while not path.exists():
        assert run.poll() is None, (root / "stderr.txt").read_text()[-4000:]
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.2)
    time.sleep(0.2)  # the line is written whole
    return path.read_text()


def finish(run: subprocess.Popen, root: Path) -> tuple[int, str]:
    try:
        status = run.wait(timeout=train_timeout_s(STEPS) * 3)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    return status, (root / "stderr.txt").read_text()


def wait_for_restart(run: subprocess.Popen, root: Path) -> None:
    """Return once the watchdog has stopped the stalled attempt and starts the next (its restart event)."""
    wait_for_file(root / WATCHDOG_FOLDER / EVENTS_NAME, run, root)


def assert_restarted_to_the_end(status: int, err: str, root: Path) -> None:
    """The run ended well, every step once in `metrics.jsonl` across its restart."""
    assert status == 0, err[-5000:]
    lines = (root / "checkpoints" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [1, 2, 3]


def only_record(root: Path) -> tuple[Path, dict]:
    (record,) = (root / "hangs").iterdir()
    return record, json.loads((record / "stall.json").read_text())


def assert_every_process_recorded(record: Path, stall: dict) -> str:
    """Every process of the run has its stacks file; the tree lists them; returns the tree."""
    tree = (record / "processes.txt").read_text()
    stacks = list((record / "stacks").iterdir())
    assert len(stacks) == stall["processes"] == len(tree.splitlines()) >= 15, tree
    for part in ("launcher", "task_runner", "fsdp_worker", "vllm_server", "vllm_engine_core", "agent_loop_worker", "ray_raylet"):
        assert any(f"-{part}.txt" in path.name for path in stacks), (part, tree)
    assert stall["python_stacks_read"] >= 8, tree
    return tree


def stacks_of(record: Path, part: str) -> str:
    (path,) = [path for path in (record / "stacks").iterdir() if path.name.endswith(f"-{part}.txt")]
    return path.read_text()


def process_with_title(root: Path, title: str) -> psutil.Process:
    for process in psutil.process_iter():
        try:
            if process.cmdline()[:1] == [title] and process.environ().get("MEDPLAY_RUN_FOLDER") == str(root):
                return process
        except psutil.Error:
            continue
    raise AssertionError(f"no {title} process of the run in {root}")


def test_a_stopped_fsdp_worker_is_seen_recorded_and_the_run_restarted(tmp_path: Path, data_dir: Path) -> None:
    held, release = tmp_path / "held", tmp_path / "release"
    run = start(tmp_path, data_dir, f"update_actor@2:{held}:{release}", "medplay.watchdog.max_restarts=1")
    try:
        worker = int(wait_for_file(held, run, tmp_path).split("(pid ")[1].rstrip(")\n"))
        os.kill(worker, signal.SIGSTOP)  # inside step 2's update: the trainer waits on it for good
        release.touch()  # the next attempt's hold (its step 3) passes at once
    finally:
        status, err = finish(run, tmp_path)
    assert_restarted_to_the_end(status, err, tmp_path)
    assert sorted(metrics_by_step(tmp_path)) == [1, 2, 3]
    record, stall = only_record(tmp_path)
    assert (stall["phase"], stall["step"], stall["attempt"]) == ("update", 2, 1)
    assert stall["limit_s"] <= stall["seconds"] <= stall["limit_s"] + SEEN_WITHIN_S
    tree = assert_every_process_recorded(record, stall)
    assert any("fsdp_worker" in line and "stopped" in line for line in tree.splitlines()), tree
    assert "phase_hold.py" in stacks_of(record, "fsdp_worker")  # where it stopped, in its Python stack
    assert f"step 2 stalled in update for {stall['seconds']:.0f} s" in err
    assert f"the stacks of every process: {record}" in err and "restarting from global_step_1" in err
    logs = [path.read_text() for path in (tmp_path / "logs").glob("train-*.log")]
    assert sum(f"the stacks of every process: {record}" in log for log in logs) == 1  # the attempt's own log says so
    assert not psutil.pid_exists(worker) or psutil.Process(worker).status() == psutil.STATUS_ZOMBIE


def test_a_stopped_vllm_engine_is_seen_recorded_and_the_run_restarted(tmp_path: Path, data_dir: Path) -> None:
    held, release = tmp_path / "held", tmp_path / "release"
    run = start(tmp_path, data_dir, f"rollout@10:{held}:{release}", "medplay.watchdog.max_restarts=1")
    try:
        wait_for_file(held, run, tmp_path)  # the rollout server holds its 10th request
        os.kill(process_with_title(tmp_path, "VLLM::EngineCore").pid, signal.SIGSTOP)
        release.touch()
    finally:
        status, err = finish(run, tmp_path)
    assert_restarted_to_the_end(status, err, tmp_path)
    record, stall = only_record(tmp_path)
    assert stall["phase"] == "generation" and stall["attempt"] == 1
    assert stall["limit_s"] <= stall["seconds"] <= stall["limit_s"] + SEEN_WITHIN_S
    tree = assert_every_process_recorded(record, stall)
    assert any("vllm_engine_core" in line and "stopped" in line for line in tree.splitlines()), tree


def test_a_hang_that_comes_back_every_time_ends_with_its_own_status(tmp_path: Path, data_dir: Path) -> None:
    """The first update of every attempt holds (nothing releases it): the same step stalls twice, then the end."""
    run = start(
        tmp_path,
        data_dir,
        f"update_actor@1:{tmp_path / 'held'}:{tmp_path / 'never'}",
        "medplay.watchdog.max_restarts=1",
    )
    status, err = finish(run, tmp_path)
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
            tmp_path, data_dir, f"advantage@1:{held}:{release}", "medplay.watchdog.max_restarts=1",
            "medplay.judge.backend=http", f"medplay.judge.url={url}", "medplay.judge.timeout_s=900",
        )  # fmt: skip
        try:
            wait_for_file(held, run, tmp_path)  # step 1's games are judged: step 2's will wait on the stopped judge
            os.kill(judge.pid, signal.SIGSTOP)
            release.touch()
            wait_for_restart(run, tmp_path)
            os.kill(judge.pid, signal.SIGCONT)  # the next attempt finds it answering
        finally:
            status, err = finish(run, tmp_path)
    finally:
        judge.kill()
    assert_restarted_to_the_end(status, err, tmp_path)
    record, stall = only_record(tmp_path)
    assert (stall["phase"], stall["step"], stall["attempt"]) == ("generation", 2, 1)
    assert stall["limit_s"] <= stall["seconds"] <= stall["limit_s"] + SEEN_WITHIN_S
    assert_every_process_recorded(record, stall)
    assert "call_judge" in stacks_of(record, "agent_loop_worker")  # a game's thread, waiting on the judge
    assert "step 2 has been in generation for" in err and "waiting for the agent-loop workers' games" in err


def test_a_reward_computation_that_sleeps_in_the_trainer_is_seen_and_restarted(tmp_path: Path, data_dir: Path) -> None:
    held, release = tmp_path / "held", tmp_path / "release"
    run = start(tmp_path, data_dir, f"advantage@2:{held}:{release}", "medplay.watchdog.max_restarts=1")
    try:
        trainer = int(wait_for_file(held, run, tmp_path).split("(pid ")[1].rstrip(")\n"))
        wait_for_restart(run, tmp_path)  # nothing ends the sleep: the watchdog must
        release.touch()
    finally:
        status, err = finish(run, tmp_path)
    assert_restarted_to_the_end(status, err, tmp_path)
    record, stall = only_record(tmp_path)
    assert (stall["phase"], stall["step"], stall["attempt"]) == ("advantage", 2, 1)
    assert stall["limit_s"] <= stall["seconds"] <= stall["limit_s"] + SEEN_WITHIN_S
    assert_every_process_recorded(record, stall)
    assert "phase_hold.py" in stacks_of(record, "task_runner")  # the driver's own stack shows where it sleeps
    assert "waiting for the trainer's own reward and advantage computation" in err
    assert not psutil.pid_exists(trainer) or psutil.Process(trainer).status() == psutil.STATUS_ZOMBIE


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False
