"""End to end: a CUDA out-of-memory raised inside verl's workers ends `medplay train` with one message and exit 4.

    .venv/bin/python -m pytest -q -m e2e tests/e2e/test_out_of_memory_cpu.py                      # update_actor
    MEDPLAY_OOM_EVERY_PHASE=1 .venv/bin/python -m pytest -q -m e2e tests/e2e/test_out_of_memory_cpu.py  # all

The real cpu-smoke run, with `MEDPLAY_INJECT_OOM` set for its Ray workers: the worker that runs the
phase raises the real `torch.OutOfMemoryError` there (medical_team/launcher/failures/out_of_memory.py), and Ray
carries it to the launcher as it would a CUDA one. `update_actor` runs in every test run: step 1
trains and saves, step 2 runs out of memory, and the step-1 checkpoint stays the resume point. The
other phases (rollout, old_log_prob, ref, the judge's server) cost a run each, so they run only with
MEDPLAY_OOM_EVERY_PHASE=1, keeping the suite inside CI's time.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from cpu_smoke import convert, train_command

from medical_team.launcher.failures.out_of_memory import KNOBS
from medical_team.models.tiny import build_tiny_model
from medical_team.run.failures import OUT_OF_MEMORY_EXIT
from medical_team.run_folder.checkpoint_folder import read_tracker

pytestmark = [pytest.mark.e2e, pytest.mark.long]
EVERY_PHASE = pytest.mark.skipif(
    not os.environ.get("MEDPLAY_OOM_EVERY_PHASE"), reason="one run per phase: set MEDPLAY_OOM_EVERY_PHASE=1"
)


def run_out_of_memory(tmp_path: Path, injected: str, *overrides: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """cpu-smoke for two steps, saving every step, with the out-of-memory injected as `injected` (PHASE[@N])."""
    run = tmp_path / "run"
    convert(run / "data")
    command = train_command(
        run, 2, "trainer.save_freq=1", f"+ray_kwargs.ray_init.runtime_env.env_vars.MEDPLAY_INJECT_OOM={injected}",
        *overrides,
    )  # fmt: skip
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    return result, run


def assert_one_clear_message(result: subprocess.CompletedProcess[str], phase: str, label: str | None = None) -> str:
    """Exit 4 and one stderr line naming the phase (as `label`), torch's figures, the knobs and the plan."""
    assert result.returncode == OUT_OF_MEMORY_EXIT, (result.returncode, result.stdout[-3000:], result.stderr[-5000:])
    lines = [line for line in result.stderr.splitlines() if line.startswith("medplay train: out of GPU memory")]
    assert len(lines) == 1, result.stderr[-5000:]
    line = lines[0]
    assert line.startswith(
        f"medplay train: out of GPU memory in {label or phase}: CUDA out of memory. Tried to allocate"
    )
    assert KNOBS[phase] in line and "`medplay probe --plan`" in line
    return line


def test_out_of_memory_in_update_actor_names_the_phase_and_keeps_the_last_checkpoint(tmp_path: Path):
    result, run = run_out_of_memory(tmp_path, "update_actor@2")
    line = assert_one_clear_message(result, "update_actor")
    checkpoints = run / "checkpoints"
    assert read_tracker(checkpoints) == 1
    assert f"the last checkpoint is intact: {checkpoints / 'global_step_1'}" in line
    assert (checkpoints / "global_step_1" / "actor").is_dir()
    # verl's figures of the step that finished (its perf/max_memory_* metrics) are in the message.
    assert re.search(r"step 1: \S*memory\S* [\d.]+", line), line


@EVERY_PHASE
@pytest.mark.slow
@pytest.mark.parametrize("phase", ["rollout", "old_log_prob", "ref"])
def test_out_of_memory_in_a_worker_phase(tmp_path: Path, phase: str):
    result, _ = run_out_of_memory(tmp_path, phase)
    line = assert_one_clear_message(result, phase)
    assert "no checkpoint was saved yet" in line


@EVERY_PHASE
@pytest.mark.slow
def test_out_of_memory_in_the_judges_server(tmp_path: Path):
    judge = build_tiny_model(tmp_path / "tiny-judge")
    result, _ = run_out_of_memory(
        tmp_path, "judge_server", "medplay.judge.backend=vllm", f"medplay.judge.model={judge}"
    )
    assert_one_clear_message(result, "judge_server", "judge start-up")
