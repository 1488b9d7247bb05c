"""The real entrypoint with the real supervisord and Ray, outside Docker, on the cpu-smoke profile.

Run: .venv/bin/python -m pytest -q -m e2e tests/container/test_appliance_pipeline.py
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from appliance_harness import ENTRYPOINT, REPO, free_ports, stop_session

from medical_team.data.medec import VALIDATION_CSV, bundled_csv
from medical_team.hardware.attention import ATTENTION_KEY, NO_PADDING_REMOVAL

pytestmark = pytest.mark.e2e

TRAIN_2_STEPS = ("trainer.total_training_steps=2",)


def write_broken_csv(path: Path) -> None:
    """A MEDEC CSV whose third data row has a non-integer Error Flag."""
    with open(bundled_csv(VALIDATION_CSV), newline="", encoding="utf-8") as source:
        rows = list(csv.reader(source))
    rows[3][rows[0].index("Error Flag")] = "maybe"
    with open(path, "w", newline="", encoding="utf-8") as target:
        csv.writer(target).writerows(rows[:30])


def supervisord_log(appliance) -> str:
    """supervisord's own log (program starts, exits, shutdown)."""
    return appliance.log("supervisor", "supervisord.log")


def full_train_log(appliance) -> str:
    """The run's full log (verl, Ray, vLLM output), named on the train step's console by `medplay: full log: PATH`."""
    found = re.findall(r"^medplay: full log: (\S+)", appliance.log("pipeline", "train.log"), flags=re.MULTILINE)
    assert len(found) == 1, appliance.log("pipeline", "train.log")
    assert found[0].startswith(f"{appliance.checkpoints}/logs/train-"), found[0]
    return Path(found[0]).read_text()


def assert_trainer_joined(appliance, address: str) -> None:
    """The train step connected to the Ray cluster at `address` instead of starting one."""
    assert f"medplay: Ray: starting ({address})" in appliance.log("pipeline", "train.log")
    # Ray logs the node's own IP for the same GCS port.
    port = address.rsplit(":", 1)[1]
    full_log = full_train_log(appliance)
    assert re.search(rf"Connecting to existing Ray cluster at address: [\d.]+:{port}\b", full_log)
    assert "Started a local Ray instance" not in full_log


def test_broken_csv_stops_the_pipeline_on_the_cluster_in_ray_address_with_the_converters_message(
    appliance, external_ray_head
):
    appliance.env.update(external_ray_head.env, RAY_ADDRESS=external_ray_head.address)
    write_broken_csv(appliance.data / "medec.csv")

    # An image without flash-attn (the gpu-pypi flavour's setting; cpu-smoke's own attention), and an API key,
    # which no line of the pipeline shows.
    appliance.env["MEDPLAY_ATTENTION"] = "sdpa"
    secret = "sk-pipeline-test-7e21"
    result = appliance.run(
        "train", *TRAIN_2_STEPS, f"+ray_kwargs.ray_init.runtime_env.env_vars.MEDPLAY_TEST_API_KEY={secret}"
    )

    message = "medec.csv:row 3: field 'Error Flag': must be an integer, found 'maybe'"
    assert result.returncode == 2, result.stdout[-5000:]
    assert message in appliance.log("pipeline", "convert.log")
    assert "step convert failed with exit status 2" in result.stdout
    assert not (appliance.logs / "pipeline" / "train.log").exists()
    # The steps before it ran and kept their logs; supervisord was shut down by the pipeline-exit listener.
    probe = json.loads((appliance.logs / "probe.json").read_text())
    assert (probe["profile"], probe["attention"]) == ("cpu-smoke", "sdpa")
    # The probe decided the run's settings; the config step (and the train step after it) got them.
    settings = f"++{ATTENTION_KEY}=sdpa {NO_PADDING_REMOVAL}"
    assert "--attention sdpa and the overrides name no attention" in appliance.log("pipeline", "probe.log")
    (config_step,) = [line for line in result.stdout.splitlines() if " pipeline: step config: " in line]
    assert f"profile=cpu-smoke {settings} {' '.join(TRAIN_2_STEPS)}" in config_step
    assert "the pipeline exited (2)" in appliance.log("supervisor", "pipeline-exit.log")
    # The pipeline joined the separately started cluster instead of starting a head of its own.
    assert f"joining the existing Ray cluster at {external_ray_head.address}" in result.stdout
    assert "is ready" in appliance.log("pipeline", "ray-ready.log")
    assert "spawned: 'ray-head'" not in supervisord_log(appliance)
    assert not (appliance.logs / "pipeline" / "ray-head.log").exists()
    assert "MEDPLAY_TEST_API_KEY=<redacted>" in result.stdout and secret not in result.stdout
    assert not [
        path for path in appliance.logs.rglob("*") if path.is_file() and secret in path.read_text(errors="replace")
    ]


def test_a_settings_files_mistakes_stop_the_pipeline_at_the_probe_all_at_once(appliance, tmp_path):
    settings = tmp_path / "run.yaml"
    settings.write_text("medplay:\n  rewards: {scheme: foo}\ntrainer: {totl_epochs: 2}\n")
    appliance.env["MEDPLAY_RUN_CONFIG"] = str(settings)

    result = appliance.run("train", "actor_rollout_ref.actor.optim.lr=-1")

    assert result.returncode == 2, result.stdout[-5000:]
    assert f"settings file {settings}: 2 settings (the overrides of train win)" in result.stdout
    probe_log = appliance.log("pipeline", "probe.log")
    for problem in (
        "medplay.rewards.scheme: 'foo' must be one of",
        "trainer.totl_epochs: verl 0.9.1 does not define this key; did you mean trainer.total_epochs?",
        "actor_rollout_ref.actor.optim.lr: -1; the actor's learning rate must be a number above 0",
    ):
        assert problem in probe_log
    assert "step probe failed with exit status 2" in result.stdout
    # Nothing after the probe ran: no Ray, no judge, no conversion.
    assert sorted(path.name for path in (appliance.logs / "pipeline").iterdir()) == ["probe.log"]


def package_with_yaml_judge_backend(root: Path, backend: str) -> Path:
    """A copy of the medplay package whose cpu-smoke profile sets `medplay.judge.backend` (no override string)."""
    shutil.copytree(REPO / "medical_team", root / "medical_team", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    shutil.copytree(REPO / "configs", root / "configs")
    profile = root / "configs" / "profile" / "cpu-smoke.yaml"
    text = profile.read_text()
    assert text.count("    backend: rules\n") == 1
    profile.write_text(text.replace("    backend: rules\n", f"    backend: {backend}\n"))
    return root


def run_then_stop(appliance, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the entrypoint and send it SIGTERM (what `docker stop` sends) once a training step is logged."""
    process = subprocess.Popen([str(ENTRYPOINT), *args], env=appliance.env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
    metrics = appliance.checkpoints / "metrics.jsonl"
    try:
        deadline = time.monotonic() + 600
        while not (metrics.exists() and metrics.read_text().count("\n") >= 1):
            assert process.poll() is None and time.monotonic() < deadline, "no training step was logged"
            time.sleep(1)
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=300)
    finally:
        stop_session(process.pid)
    return subprocess.CompletedProcess(process.args, process.returncode, output, None)


def test_docker_stop_while_training_under_supervisord_judged_by_the_judge_program(appliance, tmp_path):
    (judge_port,) = free_ports(1)
    appliance.env.update(MEDPLAY_JUDGE_SERVE_ARGS="--backend rules")
    # The judge backend changes in the YAML only: the pipeline reads the composed config, not the overrides.
    appliance.env["PYTHONPATH"] = str(package_with_yaml_judge_backend(tmp_path / "package", "http"))
    # No scheduled checkpoint before step 100: the one found afterwards is the one SIGTERM asked for.
    args = ["trainer.total_training_steps=200", "trainer.save_freq=100", f"medplay.judge.server_port={judge_port}"]

    result = run_then_stop(appliance, "train", *args)

    assert result.returncode == 0, result.stdout[-8000:]
    for step in ("probe", "ray-head", "ray-ready", "convert", "train"):
        assert (appliance.logs / "pipeline" / f"{step}.log").exists(), step
    assert "spawned: 'ray-head'" in supervisord_log(appliance)
    # The head took the cluster settings of the composed config (the GCS keeps the last thousand tasks' events; no
    # idle workers started for the first driver).
    head_args = (Path(appliance.env["MEDPLAY_RUN_DIR"]) / "ray-head.args").read_text().splitlines()
    system_config = '{"task_events_max_num_task_in_gcs": 1000, "prestart_worker_first_driver": false}'
    assert f"--system-config={system_config}" in head_args
    # The trainer joined the head supervisord started rather than starting a Ray of its own.
    assert_trainer_joined(appliance, f"127.0.0.1:{appliance.env['MEDPLAY_RAY_PORT']}")
    # SIGTERM reached the trainer, which saved a checkpoint and exited 0.
    assert "received SIGTERM: forwarding it to the running step" in result.stdout
    assert "SIGTERM received: saving a checkpoint and stopping" in appliance.log("pipeline", "train.log")
    latest = int((appliance.checkpoints / "latest_checkpointed_iteration.txt").read_text())
    assert 1 <= latest < 100 and (appliance.checkpoints / f"global_step_{latest}").is_dir()
    # The judge program served the adversarial games of the run.
    assert "spawned: 'judge'" in supervisord_log(appliance)
    assert "judge server is ready" in appliance.log("pipeline", "judge-ready.log")
    assert "composed: http" in appliance.log("pipeline", "config.log")
    config = (appliance.checkpoints / "config.yaml").read_text()
    assert f"url: http://127.0.0.1:{judge_port}" in config and "backend: http" in config
    assert re.search(r'"POST /\S+ HTTP/1\.1" 200', appliance.log("supervisor", "judge.log"))
