"""Helpers for end-to-end tests of real cpu-smoke runs that a test holds in a phase (medical_team/run/phase_hold.py)
and that the watchdog sees, records and restarts (tests/e2e/test_faults_cpu.py), and the judge server a test stops
(tests/e2e/test_judge_outage.py too)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psutil
from cpu_smoke import MEDPLAY, train_command, train_timeout_s
from processes import free_port
from watchdog_limits import WATCHDOG

from medical_team.run.phase_hold import HOLD_ENV
from medical_team.run.run_key import RUN_FOLDER_ENV
from medical_team.run.watchdog_files import EVENTS_NAME, WATCHDOG_FOLDER
from medical_team.run_folder.checkpoint_folder import read_tracker


def start(root: Path, data_dir: Path, holds: str, steps: int, starts: int, *overrides: str) -> subprocess.Popen:
    """`medplay train` of `steps` steps into `root` with the phase holds `holds` (PHASE@STEP:HELD:RELEASE[,...]) and
    the tests' watchdog limits, under a hang guard for `starts` starts of verl."""
    (root / "data").symlink_to(data_dir)
    command = train_command(
        root, steps, *WATCHDOG, f"+ray_kwargs.ray_init.runtime_env.env_vars.{HOLD_ENV}='{holds}'", *overrides
    )  # quoted: Hydra reads an unquoted comma as a list
    command[2] = str(train_timeout_s(steps) * starts)
    with (root / "stdout.txt").open("w") as out, (root / "stderr.txt").open("w") as err:
        return subprocess.Popen(command, cwd=root, stdout=out, stderr=err, start_new_session=True)


@contextmanager
def judge_server() -> Iterator[tuple[subprocess.Popen, str]]:
    """A `medplay judge serve` on a loopback port, answering, and its URL; killed on the way out."""
    url = f"http://127.0.0.1:{free_port()}"
    command = [MEDPLAY, "judge", "serve", "--port", url.rsplit(":", 1)[1]]
    judge = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not _answers(url):
            assert judge.poll() is None and time.monotonic() < deadline, "the judge server did not start"
            time.sleep(0.5)
        yield judge, url
    finally:
        judge.kill()
        judge.wait()


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def wait_until(done, run: subprocess.Popen, root: Path, what: str, timeout_s: float) -> None:
    """Return once `done()` is true; fail naming `what` if the run ends first or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while not done():
        assert run.poll() is None, f"the run ended before {what}:\n" + (root / "stderr.txt").read_text()[-4000:]
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s:.0f} s"
        time.sleep(0.2)


def wait_for_held(path: Path, run: subprocess.Popen, root: Path, steps: int) -> str:
    """The text of a hold's file, once the held phase wrote it."""
    wait_until(path.exists, run, root, f"{path} written", train_timeout_s(steps))
    time.sleep(0.2)  # the line is written whole
    return path.read_text()


def held_pid(text: str) -> int:
    """The process that wrote a hold's file (`... (pid N)`)."""
    return int(text.split("(pid ")[1].rstrip(")\n"))


def restart_events(root: Path) -> list[dict]:
    """The watchdog's restart events so far, in order."""
    path = root / WATCHDOG_FOLDER / EVENTS_NAME
    lines = path.read_text().splitlines() if path.exists() else []
    return [event for event in map(json.loads, filter(None, lines)) if event["event"] == "restart"]


def wait_for_restarts(count: int, run: subprocess.Popen, root: Path, steps: int) -> None:
    """Return once the watchdog has restarted the run `count` times."""
    wait_until(lambda: len(restart_events(root)) >= count, run, root, f"restart {count}", train_timeout_s(steps))


def wait_for_verified(step: int, run: subprocess.Popen, root: Path, steps: int) -> None:
    """Return once `step`'s checkpoint is the run's newest (verl's tracker)."""
    checkpoints = root / "checkpoints"
    wait_until(lambda: read_tracker(checkpoints) == step, run, root, f"step {step}'s checkpoint", train_timeout_s(steps))


def finish(run: subprocess.Popen, root: Path, timeout_s: float) -> tuple[int, str]:
    """The run's exit status and stderr once it ends (SIGKILLed after `timeout_s`)."""
    try:
        status = run.wait(timeout=timeout_s)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    return status, (root / "stderr.txt").read_text()


def hang_records(root: Path) -> dict[tuple[str, int, int], tuple[Path, dict]]:
    """The run's hang records by their stall's (phase, step, attempt)."""
    records = {}
    for record in sorted((root / "hangs").iterdir()):
        stall = json.loads((record / "stall.json").read_text())
        records[stall["phase"], stall["step"], stall["attempt"]] = record, stall
    return records


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
    """The stacks file of the process of role `part` in a hang record."""
    (path,) = [path for path in (record / "stacks").iterdir() if path.name.endswith(f"-{part}.txt")]
    return path.read_text()


def process_with_title(root: Path, title: str) -> psutil.Process:
    """The process of the run in `root` whose command line is `title` alone (vLLM's `VLLM::EngineCore`)."""
    for process in psutil.process_iter():
        try:
            if process.cmdline()[:1] == [title] and process.environ().get(RUN_FOLDER_ENV) == str(root):
                return process
        except psutil.Error:
            continue
    raise AssertionError(f"no {title} process of the run in {root}")


def ray_actor_process(root: psutil.Process, class_part: str) -> psutil.Process:
    """The first process under `root` whose Ray title names an actor class containing `class_part`."""
    for process in root.children(recursive=True):
        try:
            title = " ".join(process.cmdline()) or process.name()
        except psutil.Error:
            continue
        if title.startswith("ray::") and class_part in title.split()[0]:
            return process
    raise AssertionError(f"no ray::*{class_part}* process under pid {root.pid}")


def gone(pid: int) -> bool:
    """The process `pid` no longer runs (or is a zombie waiting for its parent)."""
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
