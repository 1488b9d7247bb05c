"""End to end: one real CPU training meets seven faults, one after another; its watchdog carries it through six and
ends it at the seventh, which comes back in every attempt.

    .venv/bin/python -m pytest -q -m e2e tests/e2e/test_faults_cpu.py

One run of `medplay train profile=cpu-smoke` (8 steps, `medplay.watchdog.max_restarts=1`: each restart must move the
verified checkpoint on; judged by a `medplay judge serve` of the fixture's own) that the tests share: each fault stops
one attempt, the watchdog restarts the run from the checkpoint before it, and the next attempt meets the next fault
a step later. Phase holds (`MEDPLAY_INJECT_HOLD`, medical_team/run/phase_hold.py) write a file once a process is
inside the phase, so the test acts while the run provably sits there:
- attempt 1: the FSDP worker is SIGSTOPped inside step 2's update;
- attempt 2: the rollout's vLLM engine core (`VLLM::EngineCore`, which runs vLLM's worker in its own process on CPU)
  is SIGSTOPped while the rollout server serves step 3;
- attempt 3: the trainer's own reward computation (its `advantage` phase, in the task runner's process) sleeps in
  step 4;
- attempt 4: once step 4 is committed, the rollout server (verl's `vLLMHttpServer` actor) is SIGKILLed;
- attempt 5: once step 5 is committed, an agent-loop worker (medplay's `_SelfPlayAgentLoopWorker`) is SIGKILLed;
- attempt 6: once step 6's games are judged, the judge server is SIGSTOPped: it still accepts connections (the
  kernel's backlog) and never replies, so step 7's games wait on it; it is let go once the run restarted;
- attempts 7 and 8: step 8's update holds in both (nothing releases it), so the restart did not move the run on and
  the watchdog ends it with exit status 7.
A stall is seen within its limit plus a poll, leaves a record with the stacks of every process of the run, is said
with what the run waits for, and its attempt is stopped; a killed actor ends its attempt within 60 s, naming it and
the intact checkpoint (launcher/failures/dead_actors.py). Steps 1-7 are in `metrics.jsonl` once each. `long`: eight
starts of verl (docs/testing.md).
"""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from cpu_smoke import convert, train_timeout_s
from held_runs import (
    assert_every_process_recorded,
    finish,
    gone,
    hang_records,
    held_pid,
    judge_server,
    process_with_title,
    ray_actor_process,
    restart_events,
    stacks_of,
    start,
    wait_for_held,
    wait_for_restarts,
    wait_for_verified,
    wait_until,
)
from watchdog_limits import SEEN_WITHIN_S

from medical_team.run.failures import REPEATED_FAILURE_EXIT
from medical_team.run_folder.checkpoint_folder import read_tracker

STEPS = 8
STARTS = 8  # the first attempt, a restart after each of six faults, and the repeated hold's one restart

pytestmark = [pytest.mark.e2e, pytest.mark.long, pytest.mark.timeout(STARTS * train_timeout_s(STEPS) + 300)]
KILL_TO_EXIT_S = 60  # what an attempt may take from an actor's kill to its exit
KILLED = {"vLLMHttpServer": ("the rollout server", 4), "AgentLoopWorker": ("an agent-loop worker", 5)}
JUDGED_AT = 6  # the step whose games are judged when the judge server is stopped


@dataclass(frozen=True)
class Killed:
    """An actor the test SIGKILLed once `after_step` was committed, and how long its attempt took to end."""

    pid: int
    after_step: int
    exit_s: float
    tracker_then: int | None  # verl's tracker and the metrics file's steps as the attempt ended
    steps_then: list[int]


@dataclass(frozen=True)
class FaultRun:
    """The shared run, once it ended."""

    root: Path
    status: int
    err: str
    fsdp_worker: int
    trainer: int
    killed: dict[str, Killed]


@pytest.fixture(scope="module")
def faults(tmp_path_factory: pytest.TempPathFactory) -> FaultRun:
    """The run of the module, driven through its seven faults."""
    root = tmp_path_factory.mktemp("faults")
    data_dir = tmp_path_factory.mktemp("faults-data") / "data"
    convert(data_dir)
    files = {name: root / "holds" / name for name in ("update", "rollout", "advantage", "judged", "repeat")}
    holds = ",".join(
        f"{phase}@{step}:{files[name]}:{files[name]}.release"
        for name, phase, step in (
            ("update", "update_actor", 2),
            ("rollout", "rollout", 3),
            ("advantage", "advantage", 4),
            ("judged", "advantage", JUDGED_AT),
            ("repeat", "update_actor", STEPS),  # never released
        )
    )
    checkpoints = root / "checkpoints"
    killed: dict[str, Killed] = {}
    with judge_server() as (judge, url):
        run = start(
            root, data_dir, holds, STEPS, STARTS, "medplay.watchdog.max_restarts=1",
            "medplay.judge.backend=http", f"medplay.judge.url={url}", "medplay.judge.timeout_s=900",
        )  # fmt: skip
        try:
            fsdp_worker = held_pid(wait_for_held(files["update"], run, root, STEPS))
            os.kill(fsdp_worker, signal.SIGSTOP)  # inside step 2's update: the trainer waits on it for good
            release(files["update"])  # the next attempt's step 2 passes at once
            wait_for_held(files["rollout"], run, root, STEPS)  # attempt 2's server holds a request of step 3
            os.kill(process_with_title(root, "VLLM::EngineCore").pid, signal.SIGSTOP)
            release(files["rollout"])
            trainer = held_pid(wait_for_held(files["advantage"], run, root, STEPS))
            wait_for_restarts(3, run, root, STEPS)  # nothing ends the sleep: the watchdog must
            release(files["advantage"])
            for restarts, (class_part, (_role, after_step)) in enumerate(KILLED.items(), start=4):
                wait_for_verified(after_step, run, root, STEPS)
                victim = ray_actor_process(psutil.Process(run.pid), class_part)
                victim.kill()
                killed_at = time.monotonic()
                restarted = lambda n=restarts: len(restart_events(root)) >= n
                wait_until(restarted, run, root, f"restart {restarts}", KILL_TO_EXIT_S)
                exit_s = time.monotonic() - killed_at
                killed[class_part] = Killed(victim.pid, after_step, exit_s, read_tracker(checkpoints), committed(root))
            # attempt 6's trainer, in step 6's advantage (a hold written by attempt 5 names a process that is gone)
            wait_until(lambda: live_hold(files["judged"]), run, root, "attempt 6's judged hold", train_timeout_s(STEPS))
            judge.send_signal(signal.SIGSTOP)
            release(files["judged"])
            wait_for_restarts(6, run, root, STEPS)
            judge.send_signal(signal.SIGCONT)  # the next attempt finds it answering
        finally:
            status, err = finish(run, root, train_timeout_s(STEPS) * STARTS)
    return FaultRun(root, status, err, fsdp_worker, trainer, killed)


def live_hold(held: Path) -> bool:
    """A hold's file is there and the process that wrote it still runs."""
    return held.exists() and not gone(held_pid(held.read_text()))


def committed(root: Path) -> list[int]:
    """The steps in the run's metrics file, in order (the next attempt needs a start of verl before it adds one)."""
    lines = (root / "checkpoints" / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line)["step"] for line in lines]


def release(held: Path) -> None:
    """Let the held phase (and the same phase of a restarted attempt) run."""
    held.with_name(f"{held.name}.release").touch()


def test_every_step_but_the_held_one_once_through_six_restarts_then_the_repeated_hold_ends_the_run(
    faults: FaultRun,
) -> None:
    assert faults.status == REPEATED_FAILURE_EXIT, faults.err[-5000:]
    assert committed(faults.root) == list(range(1, STEPS))
    events = restart_events(faults.root)
    assert [(event["attempt"], event["verified_step"]) for event in events] == [(n + 1, n) for n in range(1, STEPS)]
    assert sorted(hang_records(faults.root)) == [
        ("advantage", 4, 3),
        ("generation", 3, 2),
        ("generation", 7, 6),
        ("update", 2, 1),
        ("update", 8, 7),
        ("update", 8, 8),
    ]


def test_a_hold_that_comes_back_after_the_restart_ends_the_run_with_its_own_status(faults: FaultRun) -> None:
    last = faults.err.strip().splitlines()[-1]
    assert f"1 restart(s) in a row did not move the run past global_step_{STEPS - 1}" in last
    assert "it keeps stopping in update" in last and f"exit status {REPEATED_FAILURE_EXIT}" in last
    for attempt in (STEPS - 1, STEPS):
        _record, stall = hang_records(faults.root)["update", STEPS, attempt]
        assert stall["limit_s"] <= stall["seconds"] <= stall["limit_s"] + SEEN_WITHIN_S


def test_a_judge_that_accepts_and_never_replies_is_seen_and_the_run_restarted(faults: FaultRun) -> None:
    step = JUDGED_AT + 1
    record, stall = hang_records(faults.root)["generation", step, JUDGED_AT]
    assert stall["limit_s"] <= stall["seconds"] <= stall["limit_s"] + SEEN_WITHIN_S
    assert_every_process_recorded(record, stall)
    assert "call_judge" in stacks_of(record, "agent_loop_worker")  # a game's thread, waiting on the judge
    said = [line for line in faults.err.splitlines() if f"step {step} has been in generation for" in line]
    assert said and "waiting for the agent-loop workers' games" in said[0], faults.err[-5000:]
    assert f"restarting from global_step_{JUDGED_AT}" in faults.err


def test_a_stopped_fsdp_worker_is_seen_recorded_and_the_run_restarted(faults: FaultRun) -> None:
    record, stall = hang_records(faults.root)["update", 2, 1]
    assert stall["limit_s"] <= stall["seconds"] <= stall["limit_s"] + SEEN_WITHIN_S
    tree = assert_every_process_recorded(record, stall)
    assert any("fsdp_worker" in line and "stopped" in line for line in tree.splitlines()), tree
    assert "phase_hold.py" in stacks_of(record, "fsdp_worker")  # where it stopped, in its Python stack
    assert f"step 2 stalled in update for {stall['seconds']:.0f} s" in faults.err
    assert f"the stacks of every process: {record}" in faults.err and "restarting from global_step_1" in faults.err
    logs = [path.read_text() for path in (faults.root / "logs").glob("train-*.log")]
    assert sum(f"the stacks of every process: {record}" in log for log in logs) == 1  # the attempt's own log says so
    assert gone(faults.fsdp_worker)


def test_a_stopped_vllm_engine_is_seen_recorded_and_the_run_restarted(faults: FaultRun) -> None:
    record, stall = hang_records(faults.root)["generation", 3, 2]
    assert stall["limit_s"] <= stall["seconds"] <= stall["limit_s"] + SEEN_WITHIN_S
    tree = assert_every_process_recorded(record, stall)
    assert any("vllm_engine_core" in line and "stopped" in line for line in tree.splitlines()), tree
    assert "restarting from global_step_2" in faults.err


def test_a_reward_computation_that_sleeps_in_the_trainer_is_seen_and_restarted(faults: FaultRun) -> None:
    record, stall = hang_records(faults.root)["advantage", 4, 3]
    assert stall["limit_s"] <= stall["seconds"] <= stall["limit_s"] + SEEN_WITHIN_S
    assert_every_process_recorded(record, stall)
    assert "phase_hold.py" in stacks_of(record, "task_runner")  # the driver's own stack shows where it sleeps
    assert "waiting for the trainer's own reward and advantage computation" in faults.err
    assert "restarting from global_step_3" in faults.err
    assert gone(faults.trainer)


@pytest.mark.parametrize("class_part", list(KILLED), ids=["rollout-server", "agent-loop-worker"])
def test_a_killed_actor_ends_its_attempt_naming_it_and_the_run_restarts(faults: FaultRun, class_part: str) -> None:
    role, after_step = KILLED[class_part]
    killed = faults.killed[class_part]
    assert killed.exit_s <= KILL_TO_EXIT_S
    lines = faults.err.splitlines()
    naming = [index for index, line in enumerate(lines) if f"pid {killed.pid}) died" in line]
    assert len(naming) == 1, faults.err[-5000:]
    line = lines[naming[0]]
    assert line.startswith(f"medplay train: stopped: {role} (Ray actor "), line
    assert f"pid {killed.pid}) died during step {after_step + 1}: " in line
    assert line.endswith(f"the last checkpoint is intact: {faults.root / 'checkpoints' / f'global_step_{after_step}'}")
    # The watchdog's next word: the attempt exited 1 and the run goes on from that checkpoint.
    said = next(line for line in lines[naming[0] :] if line.startswith("medplay: watchdog: "))
    assert said.startswith("medplay: watchdog: the run ended with exit status 1 in "), said
    assert said.endswith(
        f"restarting from global_step_{after_step} (restart 1 of at most 1 in a row without a newer checkpoint)"
    )
    (event,) = [event for event in restart_events(faults.root) if event["attempt"] == after_step + 1]
    assert (event["status"], event["verified_step"]) == (1, after_step)
    assert (killed.tracker_then, killed.steps_then) == (after_step, list(range(1, after_step + 1)))
