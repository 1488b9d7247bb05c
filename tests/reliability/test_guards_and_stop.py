"""Non-finite guard, stop requests and the append-only metrics file."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from medical_team.reliability.guards import NonFiniteGuard, NonFiniteTrainingError, non_finite_keys
from medical_team.reliability.stop_request import clear_stop_request, request_stop, stop_requested
from medical_team.task_runner.graceful_stop import honour_stop_request
from medical_team.task_runner.metrics_file import use_appending_file_logger


def test_non_finite_keys_watch_losses_grad_norms_and_rewards() -> None:
    metrics = {
        "actor/pg_loss": math.nan,
        "actor/grad_norm": math.inf,
        "assessor/reward_mean": 1.0,
        "critic/score/mean": -math.inf,
        "timing_s/step": math.nan,
        "game/tie_rate": 0.0,
    }
    assert non_finite_keys(metrics) == ["actor/grad_norm", "actor/pg_loss", "critic/score/mean"]


def test_guard_stops_after_n_consecutive_bad_steps_and_names_the_checkpoint() -> None:
    guard = NonFiniteGuard(max_consecutive=2)
    guard.observe(1, {"actor/pg_loss": math.nan}, None)
    guard.observe(2, {"actor/pg_loss": 0.3}, "ckpt/global_step_2")  # a finite step resets the count
    guard.observe(3, {"actor/pg_loss": math.nan}, "ckpt/global_step_2")
    with pytest.raises(NonFiniteTrainingError, match="last good checkpoint: ckpt/global_step_2"):
        guard.observe(4, {"assessor/reward_mean": math.inf}, "ckpt/global_step_2")


class _FakeTrainerState:
    """Only the attributes honour_stop_request reads and writes on verl's PPOTrainer."""

    def __init__(self) -> None:
        self.global_steps = 3
        self.total_training_steps = 10
        self.saves: list[int] = []

    def _save_checkpoint(self) -> None:
        self.saves.append(self.global_steps)


def test_stop_request_saves_once_and_ends_the_loop(tmp_path: Path) -> None:
    trainer = _FakeTrainerState()
    assert not honour_stop_request(trainer, tmp_path, saved_this_step=False)
    request_stop(tmp_path, "SIGTERM")
    assert stop_requested(tmp_path)
    assert honour_stop_request(trainer, tmp_path, saved_this_step=False)
    assert trainer.saves == [3] and trainer.total_training_steps == 3
    assert honour_stop_request(trainer, tmp_path, saved_this_step=True) and trainer.saves == [3]
    clear_stop_request(tmp_path)
    assert not stop_requested(tmp_path)


def test_sigterm_writes_the_stop_request_in_a_real_process(tmp_path: Path) -> None:
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from medical_team.launcher.graceful_stop import install_sigterm_handler\n"
        "from medical_team.reliability.stop_request import stop_requested\n"
        "root = Path(sys.argv[1])\n"
        "install_sigterm_handler(root, grace_period_s=30)\n"
        "print('ready', flush=True)\n"
        "while not stop_requested(root): time.sleep(0.05)\n"
        "print('stopping cleanly', flush=True)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    os.kill(proc.pid, signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "stopping cleanly" in out


def test_sigterm_after_grace_period_exits_143(tmp_path: Path) -> None:
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from medical_team.launcher.graceful_stop import install_sigterm_handler\n"
        "install_sigterm_handler(Path(sys.argv[1]), grace_period_s=0.2)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=30) == 143


def test_verl_tracking_appends_to_the_metrics_file_across_restarts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from verl.utils import tracking
    from verl.utils.tracking import Tracking

    path = tmp_path / "metrics.jsonl"
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(path))
    # use_appending_file_logger swaps a verl module attribute; monkeypatch puts verl's own class back afterwards.
    monkeypatch.setattr(tracking, "FileLogger", tracking.FileLogger)
    use_appending_file_logger()
    for step in (1, 2):  # two "runs" with the same path, as after a restart
        tracker = Tracking(project_name="p", experiment_name="e", default_backend=["file"])
        tracker.log({"assessor/accuracy": 0.5}, step=step)
        tracker.logger["file"].finish()
    assert [json.loads(line)["step"] for line in path.read_text().splitlines()] == [1, 2]


def test_the_appending_logger_does_not_outlive_the_test_that_installed_it() -> None:
    from verl.utils import tracking

    from medical_team.task_runner.metrics_file import AppendingFileLogger

    assert tracking.FileLogger is not AppendingFileLogger


def test_a_restart_cuts_the_unfinished_line_a_killed_run_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from verl.utils import tracking
    from verl.utils.tracking import Tracking

    from medical_team.run_folder.metrics_records import read_step_records

    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1, "data": {"assessor/accuracy": 0.5}}\n{"step": 2, "data": {"assess')
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(path))
    monkeypatch.setattr(tracking, "FileLogger", tracking.FileLogger)
    use_appending_file_logger()
    tracker = Tracking(project_name="p", experiment_name="e", default_backend=["file"])
    tracker.log({"assessor/accuracy": 0.75}, step=2)
    tracker.logger["file"].finish()

    records = read_step_records(path)
    assert records.steps == {1: {"assessor/accuracy": 0.5}, 2: {"assessor/accuracy": 0.75}} and not records.torn
