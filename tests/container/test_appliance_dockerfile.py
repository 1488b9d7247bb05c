"""What the image promises, read from the Dockerfile (no Docker engine runs here), and its health check script.

Run: .venv/bin/python -m pytest -q tests/container/test_appliance_dockerfile.py
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time

from appliance_harness import REPO

DOCKERFILE = (REPO / "Dockerfile").read_text()
HEALTHCHECK = REPO / "entrypoints" / "healthcheck.sh"


def instructions(name: str) -> list[str]:
    """The arguments of every `NAME ...` instruction, continuation lines joined."""
    joined = re.sub(r"\\\n\s*", " ", DOCKERFILE)
    return [line.split(" ", 1)[1] for line in joined.splitlines() if line.startswith(f"{name} ")]


def test_every_copied_path_exists_and_is_in_the_build_context():
    allowed = {line[1:].rstrip("/") for line in (REPO / ".dockerignore").read_text().splitlines() if line[:1] == "!"}
    for arguments in instructions("COPY"):
        *sources, _target = arguments.split()
        for source in sources:
            assert (REPO / source).exists(), source
            assert source.split("/")[0] in allowed, f"{source} is excluded by .dockerignore"


def test_runs_as_a_non_root_user_with_a_host_matchable_uid():
    (user,) = instructions("USER")
    assert user == "${MEDPLAY_UID}:${MEDPLAY_GID}"
    defaults = dict(arg.split("=", 1) for arg in instructions("ARG") if "=" in arg)
    assert int(defaults["MEDPLAY_UID"]) > 0 and int(defaults["MEDPLAY_GID"]) > 0
    assert 'useradd --uid "${MEDPLAY_UID}"' in DOCKERFILE


def test_volumes_offline_models_and_entrypoint():
    (volumes,) = instructions("VOLUME")
    assert json.loads(volumes) == ["/checkpoints", "/models", "/data", "/logs", "/cache"]
    environment = " ".join(instructions("ENV"))
    for setting in ("HF_HOME=/models", "HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "WANDB_MODE=offline",
                    "MEDPLAY_CHECKPOINTS=/checkpoints", "MEDPLAY_CACHE_DIR=/cache"):  # fmt: skip
        assert setting in environment, setting
    (entrypoint,) = instructions("ENTRYPOINT")
    assert json.loads(entrypoint) == ["/usr/bin/tini", "--", "/opt/medplay/entrypoints/entrypoint.sh"]
    (healthcheck,) = instructions("HEALTHCHECK")
    assert healthcheck.endswith('CMD ["/opt/medplay/entrypoints/healthcheck.sh"]')


def healthcheck(run_dir, env_extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the health check script against this run dir."""
    env = {**os.environ, "MEDPLAY_RUN_DIR": str(run_dir), **env_extra}
    return subprocess.run([str(HEALTHCHECK)], env=env, capture_output=True, text=True, timeout=30, check=False)


def test_health_follows_supervisord_and_the_trainer_heartbeat(tmp_path):
    heartbeat = tmp_path / "metrics.jsonl"
    env = {"MEDPLAY_HEARTBEAT_FILE": str(heartbeat), "MEDPLAY_HEARTBEAT_MAX_AGE_S": "600"}
    assert healthcheck(tmp_path, env).stdout.strip() == "unhealthy: supervisord is not running"

    # A live process stands in for supervisord: the check only asks whether the pid is alive.
    alive = subprocess.Popen(["sleep", "60"])
    try:
        (tmp_path / "supervisord.pid").write_text(f"{alive.pid}\n")
        (tmp_path / "pipeline.step").write_text("convert\n")
        result = healthcheck(tmp_path, env)
        assert (result.returncode, result.stdout.strip()) == (0, "healthy: pipeline step convert")

        (tmp_path / "pipeline.step").write_text("train\n")
        assert healthcheck(tmp_path, env).returncode == 0  # the train step just started

        an_hour_ago = time.time() - 3600
        os.utime(tmp_path / "pipeline.step", (an_hour_ago, an_hour_ago))
        result = healthcheck(tmp_path, env)
        assert result.returncode == 1 and result.stdout.startswith(f"unhealthy: no trainer heartbeat ({heartbeat})")

        heartbeat.write_text('{"step": 1}\n')  # the trainer logged a step
        result = healthcheck(tmp_path, env)
        assert result.returncode == 0 and result.stdout.startswith("healthy: training, last heartbeat")
    finally:
        alive.kill()
        alive.wait()


def test_heartbeat_is_the_composed_metrics_file_the_pipeline_wrote(tmp_path):
    heartbeat = tmp_path / "elsewhere" / "metrics.jsonl"
    (tmp_path / "heartbeat.path").write_text(f"{heartbeat}\n")  # `medplay config get medplay.metrics_file`
    alive = subprocess.Popen(["sleep", "60"])
    try:
        (tmp_path / "supervisord.pid").write_text(f"{alive.pid}\n")
        (tmp_path / "pipeline.step").write_text("train\n")
        an_hour_ago = time.time() - 3600
        os.utime(tmp_path / "pipeline.step", (an_hour_ago, an_hour_ago))
        env = {"MEDPLAY_HEARTBEAT_MAX_AGE_S": "600"}
        result = healthcheck(tmp_path, {**env, "MEDPLAY_CHECKPOINTS": str(tmp_path)})
        assert result.returncode == 1 and result.stdout.startswith(f"unhealthy: no trainer heartbeat ({heartbeat})")
    finally:
        alive.kill()
        alive.wait()


def test_unhealthy_while_the_watchdog_declares_a_stall(tmp_path):
    """Liveness is not progress: a fresh heartbeat does not hide a stall the run's watchdog declared."""
    stall = tmp_path / "checkpoints" / "watchdog" / "stall.json"
    (tmp_path / "stall.path").write_text(f"{stall}\n")  # as entrypoints/pipeline.sh writes it
    heartbeat = tmp_path / "metrics.jsonl"
    heartbeat.write_text('{"step": 1}\n')
    alive = subprocess.Popen(["sleep", "60"])
    try:
        (tmp_path / "supervisord.pid").write_text(f"{alive.pid}\n")
        (tmp_path / "pipeline.step").write_text("train\n")
        env = {"MEDPLAY_HEARTBEAT_FILE": str(heartbeat)}
        assert healthcheck(tmp_path, env).returncode == 0
        stall.parent.mkdir(parents=True)
        stall.write_text('{"phase": "update", "step": 2}\n')
        result = healthcheck(tmp_path, env)
        assert result.returncode == 1
        assert result.stdout.startswith('unhealthy: the run\'s watchdog declared a stall: {"phase": "update"')
        stall.unlink()  # the restarted run has begun
        assert healthcheck(tmp_path, env).returncode == 0
    finally:
        alive.kill()
        alive.wait()
