"""The container entrypoint outside Docker: command dispatch, argument checks, lint, and SIGTERM forwarding.

Run: .venv/bin/python -m pytest -q tests/container/test_appliance_entrypoint.py
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import httpx
import psutil
import pytest
from appliance_harness import ENTRYPOINT, REPO, VENV_BIN, free_ports, stop_session
from tensorboard_run import wait_until_shown, write_events

from medical_team.cli import COMMANDS

SHELL_SCRIPTS = sorted([*REPO.glob("entrypoints/*.sh"), *REPO.glob("docker/*.sh"), REPO / ".ci" / "run"])


def entrypoint(appliance, *args: str) -> subprocess.CompletedProcess[str]:
    """Run a short entrypoint command."""
    return subprocess.run([str(ENTRYPOINT), *args], env=appliance.env, capture_output=True, text=True, timeout=300,
                          check=False)  # fmt: skip


def test_help_lists_every_command(appliance):
    result = entrypoint(appliance, "help")
    assert result.returncode == 0
    for command in ("train", "shell", "help", *COMMANDS):  # every medplay command, `train` being the pipeline
        assert f"\n  {command} " in result.stdout, command


@pytest.mark.parametrize("command", sorted(set(COMMANDS) - {"train"}))
def test_every_medplay_command_runs_through_the_entrypoint(appliance, command: str):
    result = entrypoint(appliance, command, "--help")
    assert result.returncode == 0 and result.stdout.startswith(f"usage: medplay {command}"), result.stderr


def test_config_get_reads_the_composed_config(appliance):
    result = entrypoint(appliance, "config", "get", "medplay.stop_grace_s", "medplay.wandb_mode")
    assert result.returncode == 0 and result.stdout.split() == ["600", "offline"], result.stderr


def test_unknown_command_is_a_usage_error(appliance):
    result = entrypoint(appliance, "fly")
    assert result.returncode == 2
    assert "entrypoint: error: unknown command 'fly'" in result.stderr and "usage:" in result.stderr


def test_version_runs_medplay_version(appliance):
    result = entrypoint(appliance, "version")
    assert result.returncode == 0
    versions = json.loads(result.stdout)
    assert versions["verl"] == "0.9.1" and versions["medplay"]


def test_shell_runs_bash_with_the_appliance_environment(appliance):
    result = entrypoint(appliance, "shell", "-c", 'echo "$MEDPLAY_CHECKPOINTS $RAY_AUTH_MODE"')
    assert result.returncode == 0
    assert result.stdout.split() == [appliance.env["MEDPLAY_CHECKPOINTS"], "token"]


def test_every_command_finds_the_ray_token_a_local_ray_needs(appliance):
    # `medplay train` under `bench` or in `shell` starts a Ray of its own, which reads the token: the entrypoint makes
    # it for every command, readable by the image's user alone, and keeps it for the next command.
    read = 'stat -c %a "$RAY_AUTH_TOKEN_PATH"; wc -c < "$RAY_AUTH_TOKEN_PATH"; cat "$RAY_AUTH_TOKEN_PATH"'
    first, second = (entrypoint(appliance, "shell", "-c", read) for _ in range(2))
    assert first.returncode == 0, first.stderr
    assert first.stdout.split()[:2] == ["600", "64"] and first.stdout == second.stdout


def test_convert_passes_its_arguments_through(appliance):
    result = entrypoint(appliance, "convert", "--output", str(appliance.root / "converted"), "--val-ratio", "2")
    assert result.returncode == 2
    assert "argument --val-ratio: must be between 0 and 1" in result.stderr


def test_an_override_with_a_line_break_is_refused(appliance):
    result = entrypoint(appliance, "train", "trainer.experiment_name=a\nb")
    assert result.returncode == 2
    assert "a Hydra override cannot contain a line break" in result.stderr


@pytest.mark.parametrize("script", SHELL_SCRIPTS, ids=lambda path: str(path.relative_to(REPO)))
def test_shell_scripts_pass_shellcheck(script: Path):
    result = subprocess.run([VENV_BIN / "shellcheck", script], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


def test_dockerfile_passes_hadolint():
    result = subprocess.run([VENV_BIN / "hadolint", REPO / "Dockerfile"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


@pytest.mark.e2e
def test_sigterm_reaches_the_running_step_and_its_status_is_the_exit_status(appliance):
    process = subprocess.Popen([str(ENTRYPOINT), "train"], env=appliance.env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not _running_probe(process.pid):  # the step's own process, not the line that announces it
            assert process.poll() is None and time.monotonic() < deadline, "the probe step never started"
            time.sleep(0.2)
        process.send_signal(signal.SIGTERM)  # what `docker stop` sends to the container's main process
        output, _ = process.communicate(timeout=120)
    finally:
        stop_session(process.pid)

    # The probe was killed by the forwarded SIGTERM (a shell reports 128 + 15) and nothing after it ran.
    assert process.returncode == 143, output[-4000:]
    assert "received SIGTERM: forwarding it to the running step" in output
    assert "step probe failed with exit status 143" in output
    assert not (appliance.logs / "pipeline" / "convert.log").exists()
    assert (appliance.run_dir / "pipeline.status").read_text().strip() == "143"


def _running_probe(pid: int) -> bool:
    """True once `medplay probe` runs below `pid` (the redaction of its command line, which names it too, aside)."""
    try:
        below = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return False
    for child in below:
        try:
            command = child.cmdline()
        except psutil.Error:
            continue
        if "probe" in command and "medical_team.run.redaction" not in command:
            return True
    return False

def test_judge_program_serves_on_loopback_and_stops_on_sigterm(appliance):
    (port,) = free_ports(1)
    appliance.env.update(MEDPLAY_JUDGE_SERVE_ARGS="--backend rules")
    (appliance.run_dir / "judge.args").write_text(f"--port={port}\n")  # the pipeline writes the composed port
    server = subprocess.Popen([str(REPO / "entrypoints" / "judge-server.sh")], env=appliance.env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, "the judge server did not come up"
            time.sleep(0.5)
        server.send_signal(signal.SIGTERM)  # what supervisord sends when it stops the program
        server.communicate(timeout=60)
    finally:
        stop_session(server.pid)
    assert server.returncode == 0


def test_a_bad_stop_grace_is_refused_before_supervisord_starts(appliance):
    # supervisord's stop wait comes from the composed medplay.stop_grace_s.
    result = entrypoint(appliance, "train", "medplay.stop_grace_s=10m")
    assert result.returncode == 2
    assert "medplay.stop_grace_s must be a number of seconds, got '10m'" in result.stderr
    assert not (appliance.run_dir / "supervisord.pid").exists()


def test_the_shell_reads_ray_resources_and_ports_from_the_composed_config(appliance):
    def composed(*arguments: str) -> list[str]:
        done = subprocess.run([str(VENV_BIN / "medplay"), "config", "get", *arguments], env=appliance.env,
                              capture_output=True, text=True, timeout=300, check=True)  # fmt: skip
        return done.stdout.splitlines()

    keys = (
        "ray_kwargs.ray_init.num_cpus",
        "ray_kwargs.ray_init.num_gpus",
        "ray_kwargs.ray_init._system_config",
        "medplay.judge.server_port",
    )
    # The GCS keeps the last thousand tasks' events; no idle workers started for the first driver.
    system_config = '{"task_events_max_num_task_in_gcs": 1000, "prestart_worker_first_driver": false}'
    assert composed(*keys, "profile=cpu-smoke") == ["16", "1", system_config, "8100"]  # the head is over-committed
    assert composed(*keys, "profile=80g", "medplay.judge.server_port=9000") == ["", "", system_config, "9000"]
    pipeline = (REPO / "entrypoints" / "pipeline.sh").read_text()
    assert all(key in pipeline for key in keys) and "--num-cpus=16" not in pipeline


def test_tensorboard_serves_the_runs_on_the_checkpoints_volume(appliance):
    write_events(appliance.checkpoints)
    (port,) = free_ports(1)  # the image's port is 6006; a later --port wins, as for any option of TensorBoard
    server = subprocess.Popen([str(ENTRYPOINT), "tensorboard", "--port", str(port)], env=appliance.env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
    try:
        wait_until_shown(port, serving=lambda: server.poll() is None)
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=60)
    finally:
        stop_session(server.pid)
