"""End to end: `medplay train profile=cpu-smoke` runs verl's real trainer on CPU, survives SIGKILL, and resumes.

    .venv/bin/python -m pytest -q -m e2e tests/e2e/test_train_cpu.py

One module-wide run converts the bundled MEDEC data and starts a 2-step training that is killed with
SIGKILL (the whole process tree, as when a container dies) once step 1's checkpoint is complete, while step 2
runs; a second run with `trainer.resume_mode=auto` continues from the saved step and ends step 2, keeping one
checkpoint (`trainer.max_actor_ckpt_to_keep=1`): the killed run's step 1 goes once step 2 is committed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
import torch
from cpu_smoke import TRAIN_TIMEOUT_S, convert, full_log, metrics_by_step, train, train_command
from omegaconf import OmegaConf
from safetensors.torch import load_file
from spec_names import ADVERSARIAL, GAME_MD_METRICS, MONITOR_METRICS, MONITOR_PLOT_LABELS

from medical_team.cli import main
from medical_team.game.game_records import games_folder, read_game_records
from medical_team.launcher.config.compose import compose_config
from medical_team.launcher.plan.disk_plan import config_checkpoint_parts
from medical_team.reliability.checkpoints import COMPLETE_MARKER, damage
from medical_team.run.shm_segments import remove_orphaned_segments, shm_segments
from medical_team.run_folder.checkpoint_folder import read_tracker, step_dirs

pytestmark = pytest.mark.e2e

KILLED_RUN_STEPS = 2  # asked for, never finished: SIGKILL arrives once step KILL_AFTER_SAVE_OF is saved
KILL_AFTER_SAVE_OF = 1
FINAL_STEPS = 2
KEPT = 1  # the resumed run's trainer.max_actor_ckpt_to_keep
CONSOLE_LINE_LIMIT = 60  # the console shows stages, progress and the summary; the rest goes to the run's log
# An API key passed as an override, as a user would for a tracker: the run gets it, nothing it writes shows it.
SECRET = "sk-test-4f1d9c2b7a"
SECRET_OVERRIDE = f"+ray_kwargs.ray_init.runtime_env.env_vars.MEDPLAY_TEST_API_KEY={SECRET}"


@dataclass(frozen=True)
class KilledRun:
    """What the SIGKILLed training left behind."""

    alive_when_killed: bool
    tracker_at_kill: int | None
    steps_logged_before_kill: list[int]


def train_and_kill(root: Path, steps: int, after_save_of: int) -> KilledRun:
    """Start a training and SIGKILL its whole process tree as soon as step `after_save_of` is committed.

    Committed: its checkpoint complete and verl's tracker pointing at it, which StepCommits does only once the
    step's metrics are logged (a while after the checkpoint's marker: waiting for the marker alone raced).
    """
    checkpoints = root / "checkpoints"
    marker = checkpoints / f"global_step_{after_save_of}" / COMPLETE_MARKER
    shm_before = shm_segments()
    proc = subprocess.Popen(train_command(root, steps), cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + TRAIN_TIMEOUT_S
    while proc.poll() is None and time.monotonic() < deadline:
        if marker.exists() and read_tracker(checkpoints) == after_save_of:
            break
        time.sleep(0.1)
    alive = proc.poll() is None
    tree = [proc.pid, *(child.pid for child in psutil.Process(proc.pid).children(recursive=True))] if alive else []
    for pid in tree:  # everything at once, as when a container is killed: no process gets to clean up
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=60)
    psutil.wait_procs([p for p in map(_process, tree) if p], timeout=60)
    remove_orphaned_segments(shm_before)  # vLLM's shared memory, left by the killed rollout server
    return KilledRun(alive, read_tracker(root / "checkpoints"), sorted(metrics_by_step(root)))


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None


@dataclass(frozen=True)
class Runs:
    """The run folder, the killed first run, and the console and full log of the resumed second run."""

    root: Path
    killed: KilledRun
    resumed_stdout: str
    resumed_stderr: str
    resumed_log: str


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """Convert the data, train until SIGKILL after step 1's checkpoint, then resume to step 2."""
    if shutil.which("timeout") is None:
        pytest.skip("needs coreutils `timeout`")
    root = tmp_path_factory.mktemp("cpu-smoke")
    convert(root / "data")
    killed = train_and_kill(root, KILLED_RUN_STEPS, after_save_of=KILL_AFTER_SAVE_OF)
    resumed = train(
        root, FINAL_STEPS, "trainer.resume_mode=auto", f"trainer.max_actor_ckpt_to_keep={KEPT}", SECRET_OVERRIDE
    )
    return Runs(root, killed, resumed.stdout, resumed.stderr, full_log(resumed.stdout))


@pytest.fixture(scope="module")
def run_root(runs: Runs) -> Path:
    """The folder both runs wrote to."""
    return runs.root


def test_checkpoint_folder_and_tracker_exist(run_root: Path) -> None:
    checkpoints = run_root / "checkpoints"
    assert (checkpoints / "latest_checkpointed_iteration.txt").read_text().strip() == str(FINAL_STEPS)
    assert (checkpoints / f"global_step_{FINAL_STEPS}" / "actor" / "huggingface" / "model.safetensors").is_file()


def test_only_the_kept_checkpoint_remains_whole(run_root: Path) -> None:
    checkpoints = run_root / "checkpoints"
    assert sorted(step_dirs(checkpoints)) == [FINAL_STEPS]  # step 1, saved by the killed run, removed
    kept = checkpoints / f"global_step_{FINAL_STEPS}"
    assert (kept / COMPLETE_MARKER).is_file() and damage(kept) == []  # every file its manifest lists is there


def test_the_kept_checkpoint_is_the_size_the_disk_plan_estimates(run_root: Path) -> None:
    config = compose_config(["profile=cpu-smoke", f"medplay.output_dir={run_root}"])
    estimate = sum(config_checkpoint_parts(config).values())
    kept = run_root / "checkpoints" / f"global_step_{FINAL_STEPS}"
    real = sum(path.stat().st_size for path in kept.rglob("*") if path.is_file())
    assert real <= estimate <= 1.05 * real, (real, estimate)  # 2,362,633 and 2,431,670 bytes when measured


def test_policy_weights_in_checkpoint_differ_from_initial(run_root: Path) -> None:
    initial = load_file(run_root / "tiny-qwen3" / "model.safetensors")
    trained = load_file(
        run_root / "checkpoints" / f"global_step_{FINAL_STEPS}" / "actor" / "huggingface" / "model.safetensors"
    )
    assert set(initial) <= set(trained)
    changed = [name for name, tensor in initial.items() if not torch.equal(tensor, trained[name].to(tensor.dtype))]
    assert len(changed) > len(initial) // 2, f"only {changed} changed"


def test_metrics_file_has_every_step_and_every_game_metric(run_root: Path) -> None:
    steps = metrics_by_step(run_root)
    assert sorted(steps) == list(range(1, FINAL_STEPS + 1))
    for step, data in steps.items():
        missing = [name for name in GAME_MD_METRICS if name not in data]
        assert not missing, f"step {step} lacks {missing}"


def test_metrics_file_has_the_runs_resources_at_every_step(run_root: Path) -> None:
    for step, data in metrics_by_step(run_root).items():
        parts = {key: value for key, value in data.items() if key.startswith("resources/rss_mib/")}
        # the trainer found the run's processes (the launcher's tree: Ray's daemons, every worker, vLLM's processes)
        assert len(parts) == 3 and sum(parts.values()) <= data["resources/run_rss_mib"], f"step {step}: {parts}"
        assert data["resources/run_rss_mib"] > 1024, f"step {step}: {data['resources/run_rss_mib']} MiB"
        assert data["resources/host_memory_available_mib"] > 0 and data["resources/disk_free_mib"] > 0
        assert data["resources/shm_used_mib"] >= 0 and data["resources/shm_free_mib"] > 0


def test_metrics_file_has_every_collapse_monitor_at_every_step(run_root: Path) -> None:
    cap = 48  # cpu-smoke's data.max_response_length
    for step, data in metrics_by_step(run_root).items():
        missing = [name for name in MONITOR_METRICS if name not in data]
        assert not missing, f"step {step} lacks {missing}"
        # the default alarms' runs of steps past their thresholds are logged too
        assert {
            "alarm/max_self_bleu",
            "alarm/max_copy_rate",
            "alarm/max_majority_verdict_share",
            "alarm/min_error_verdict_share",
            "alarm/max_error_verdict_share",
        } <= set(data)
        for role in ("attacker", "assessor"):
            assert 0 <= data[f"{role}/response_length/mean"] <= data[f"{role}/response_length/p90"] <= cap, data
            assert 0 <= data[f"{role}/response_length/clip_rate"] <= 1
        assert data["assessor/response_length/mean"] > 0
        for name in ("attacker/distinct_1", "attacker/self_bleu", "attacker/edit_distance", "attacker/copy_rate"):
            assert 0 <= data[name] <= 1, (name, data[name])


def test_report_plots_the_collapse_monitors_of_the_run(run_root: Path, tmp_path: Path) -> None:
    assert (
        main(["report", "--metrics", str(run_root / "checkpoints" / "metrics.jsonl"), "--output", str(tmp_path)]) == 0
    )
    page = (tmp_path / "report.md").read_text()
    for name, labels in MONITOR_PLOT_LABELS.items():
        assert (tmp_path / f"{name}.png").stat().st_size > 0
        assert f"Series: {', '.join(labels)}." in page
    html = (tmp_path / "report.html").read_text()
    assert all(f'id="step-{step}"' in html for step in range(1, FINAL_STEPS + 1))


def test_each_steps_games_are_recorded_once_and_bounded(run_root: Path) -> None:
    limit = OmegaConf.load(run_root / "config.yaml").medplay.report.games_per_step
    games = read_game_records(games_folder(run_root / "checkpoints" / "metrics.jsonl"))
    assert sorted(games) == list(range(1, FINAL_STEPS + 1))
    for step, data in metrics_by_step(run_root).items():
        # every step's file holds min(limit, games played) records: a replayed step replaced its own
        assert len(games[step]) == min(limit, int(data["game/games"])) > 0, (step, len(games[step]))
        assert all(record.step == step and record.assessor_response for record in games[step])


def test_both_roles_contributed_samples_in_adversarial_steps(run_root: Path) -> None:
    adversarial_steps = {
        step: data
        for step, data in metrics_by_step(run_root).items()
        if any(data[f"game/count/{c}"] for c in ADVERSARIAL)
    }
    assert adversarial_steps, "no step played an adversarial game"
    for step, data in adversarial_steps.items():
        assert data["samples/attacker"] > 0 and data["samples/assessor"] > 0, f"step {step}: {data}"


def test_sigkill_came_mid_run_after_a_complete_checkpoint(runs: Runs) -> None:
    assert runs.killed.alive_when_killed, "the first run ended before it could be killed"
    assert runs.killed.tracker_at_kill == KILL_AFTER_SAVE_OF


def test_resume_continues_from_the_saved_step(runs: Runs) -> None:
    resumed_from = KILL_AFTER_SAVE_OF + 1
    assert f"step:{resumed_from} -" in runs.resumed_log
    assert "step:1 -" not in runs.resumed_log, "the resumed run started again from step 1"
    assert f"step:{KILL_AFTER_SAVE_OF} -" not in runs.resumed_log, "the resumed run repeated a saved step"
    assert read_tracker(runs.root / "checkpoints") == FINAL_STEPS


def test_console_is_short_and_ends_with_the_summary_and_paths(runs: Runs) -> None:
    console = runs.resumed_stdout + runs.resumed_stderr
    assert len(console.splitlines()) < CONSOLE_LINE_LIMIT, console
    lines = runs.resumed_stdout.splitlines()
    assert f"step {KILL_AFTER_SAVE_OF + 1}/{FINAL_STEPS} [" in runs.resumed_stdout  # the progress line
    for line, step in zip(lines[-FINAL_STEPS - 3 : -3], range(1, FINAL_STEPS + 1), strict=True):
        assert line.startswith(f"step {step}: timing_s/step="), line
    assert lines[-3].startswith(f"checkpoints: {runs.root / 'checkpoints'} (latest step: {FINAL_STEPS})")
    assert lines[-2] == f"metrics: {runs.root / 'checkpoints' / 'metrics.jsonl'}"
    assert lines[-1].startswith(f"log: {runs.root / 'logs'}/train-")
    assert "Traceback" not in console and "WARNING" not in console
    # stderr holds only what medplay says there (cpu-smoke's `rules` judge is warned about).
    assert all(line.startswith("medplay: ") for line in runs.resumed_stderr.splitlines()), runs.resumed_stderr


def test_a_secret_override_shows_in_neither_the_console_the_log_nor_the_config(runs: Runs) -> None:
    config = (runs.root / "config.yaml").read_text()
    assert "MEDPLAY_TEST_API_KEY: <redacted>" in config
    assert "MEDPLAY_TEST_API_KEY" in runs.resumed_log  # verl printed the config, redacted
    for text in (runs.resumed_stdout, runs.resumed_stderr, runs.resumed_log, config):
        assert SECRET not in text


def test_metrics_file_keeps_the_steps_logged_before_the_kill(runs: Runs) -> None:
    assert set(range(1, KILL_AFTER_SAVE_OF + 1)) <= set(runs.killed.steps_logged_before_kill)
    assert set(runs.killed.steps_logged_before_kill) <= set(metrics_by_step(runs.root))
