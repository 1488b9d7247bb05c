"""A Ray actor whose process dies ends the watched block naming it; actors shut down on purpose do not.

Each case runs a real private Ray (no dashboard, as the CPU profile starts it) in a child process, so the test
process never becomes a Ray driver: the child's main thread blocks in `ray.get` on an actor, as the launcher's does
on verl's task runner, inside `ends_on_dead_actor`, and an actor named like verl's rollout server is SIGKILLed. This
also checks the Ray internals the watch reads (`ray._private.state.actors` and its death causes,
docs/verl-integration.md). The real trainer: tests/e2e/test_faults_cpu.py.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from medical_team.launcher.failures.dead_actors import ROLES, death_line, role_of
from medical_team.launcher.failures.run_errors import failure_report
from medical_team.run.failures import ActorProcessDiedError

CHILD = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    from pathlib import Path
    import ray
    from medical_team.launcher.failures.dead_actors import ends_on_dead_actor

    case, folder = sys.argv[1], Path(sys.argv[2])
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)

    @ray.remote(num_cpus=0)
    class vLLMHttpServer:
        def pid(self):
            return os.getpid()

    @ray.remote(num_cpus=0)
    class SelfPlayTaskRunner:
        def run(self, seconds):
            time.sleep(seconds)

    def dead(actor):  # Ray's record of the actor says DEAD (the watch's own source)
        return ray._private.state.actors(actor_id=actor._actor_id.hex())["State"] == "DEAD"

    def wait_until_dead(*actors):
        deadline = time.monotonic() + 60
        while not all(map(dead, actors)):
            assert time.monotonic() < deadline, "Ray did not record the actors dead"
            time.sleep(0.1)

    server = vLLMHttpServer.options(name="vllm_server_0_0").remote()
    pid = ray.get(server.pid.remote())
    # Shut down on purpose: out of scope before the watch, ray.kill inside it.
    gone = vLLMHttpServer.remote()
    ray.get(gone.pid.remote())
    gone_id = gone._actor_id.hex()
    del gone
    runner = SelfPlayTaskRunner.remote()
    given_up = []
    started = time.monotonic()
    try:
        with ends_on_dead_actor(folder / "metrics.jsonl", folder / "checkpoints", given_up.append) as watch:
            if case == "kill":
                threading.Timer(2, os.kill, args=(pid, signal.SIGKILL)).start()
                ray.get(runner.run.remote(120))
            elif case == "error":
                os.kill(pid, signal.SIGKILL)
                wait_until_dead(server)
                raise RuntimeError("verl's own error")
            else:
                ray.get(runner.run.remote(1))
                ray.kill(server)
                wait_until_dead(server)
                deadline = time.monotonic() + 60
                while ray._private.state.actors(actor_id=gone_id)["State"] != "DEAD":
                    assert time.monotonic() < deadline, "the dropped actor did not end"
                    time.sleep(0.1)
                print(f"CHECK {watch.check()}", flush=True)
    except Exception as error:
        print(f"ERROR {type(error).__name__}: {error}", flush=True)
        print(f"CAUSE {type(error.__cause__).__name__}", flush=True)
    print(f"SECONDS {time.monotonic() - started:.1f}", flush=True)
    print(f"GIVEN_UP {len(given_up)}", flush=True)
    ray.shutdown()
    """
)


def run_child(tmp_path: Path, case: str) -> dict[str, str]:
    """Run the child in `case`; its ERROR, CAUSE, SECONDS and GIVEN_UP lines."""
    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "data": {}}\n')
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "latest_checkpointed_iteration.txt").write_text("1")
    result = subprocess.run(
        [sys.executable, "-c", CHILD, case, str(tmp_path)], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr[-4000:]
    said = dict(line.split(" ", 1) for line in result.stdout.splitlines() if line.split(" ")[0].isupper())
    assert "SECONDS" in said, result.stdout[-2000:] + result.stderr[-4000:]
    return said


@pytest.mark.slow
def test_a_killed_actor_interrupts_the_blocked_main_thread_naming_it(tmp_path: Path) -> None:
    said = run_child(tmp_path, "kill")
    error = said.get("ERROR", "")
    assert error.startswith("ActorProcessDiedError: the rollout server (Ray actor vLLMHttpServer, pid "), said
    assert " died during step 2: The actor is dead because its worker process has died." in error
    assert "Some common causes" not in error and "other actor" not in error
    assert error.endswith(f"; the last checkpoint is intact: {tmp_path / 'checkpoints' / 'global_step_1'}")
    assert float(said["SECONDS"]) < 15, said  # the kill comes 2 s in; one poll is 2 s
    assert said["GIVEN_UP"] == "0"  # the main thread left in time: the deadline was not needed


@pytest.mark.slow
def test_the_blocks_own_error_becomes_the_death_when_an_actor_died(tmp_path: Path) -> None:
    said = run_child(tmp_path, "error")
    assert said.get("ERROR", "").startswith("ActorProcessDiedError: the rollout server (Ray actor vLLMHttpServer"), said
    assert said["CAUSE"] == "RuntimeError"


@pytest.mark.slow
def test_actors_shut_down_on_purpose_end_nothing(tmp_path: Path) -> None:
    said = run_child(tmp_path, "normal")
    assert "ERROR" not in said, said
    assert said["CHECK"] == "None"
    assert said["GIVEN_UP"] == "0"


def test_the_console_line_and_status() -> None:
    line, status = failure_report(ActorProcessDiedError("the rollout server (...) died during step 2: ..."))
    assert (line, status) == ("medplay train: stopped: the rollout server (...) died during step 2: ...", 1)
    assert role_of("_SelfPlayAgentLoopWorker") == "an agent-loop worker"
    assert role_of("SomethingElse") == "a Ray actor of the run"


def test_the_line_without_a_step_or_checkpoint(tmp_path: Path) -> None:
    from ray.core.generated.common_pb2 import ActorDeathCause

    cause = ActorDeathCause()
    cause.actor_died_error_context.error_message = "The actor is dead. Some common causes include: (1) ..."
    cause.actor_died_error_context.class_name = "WorkerDict"
    dead = [{"ActorClassName": "WorkerDict", "Pid": 7, "DeathCause": cause}] * 2
    line = death_line(dead, tmp_path / "metrics.jsonl", tmp_path / "checkpoints")
    assert line == (
        "a worker of the actor and reference engines (Ray actor WorkerDict, pid 7) died before step 1 ended: "
        "The actor is dead; 1 other actor(s) of the run died too; no checkpoint was saved yet"
    )


def test_the_roles_name_verls_actor_classes() -> None:
    """verl's actor classes still carry the names the line's roles are found by (read from verl's source)."""
    verl = Path(importlib.util.find_spec("verl").origin).parent  # read, not imported: vLLM's server module needs vLLM
    sources = {
        "vLLMHttpServer": ("workers/rollout/vllm_rollout/vllm_async_server.py", "class vLLMHttpServer"),
        "AgentLoopWorker": ("experimental/agent_loop/agent_loop.py", "class AgentLoopWorker"),
        "TaskRunner": ("trainer/main_ppo.py", "class TaskRunnerV1"),
        "WorkerDict": ("single_controller/ray/base.py", "class WorkerDict("),
        "RewardLoopWorker": ("experimental/reward_loop/reward_loop.py", "class RewardLoopWorker"),
    }
    assert [part for part, _ in ROLES] == list(sources)
    for file, text in sources.values():
        assert text in (verl / file).read_text(), f"verl/{file} no longer defines {text!r}"
