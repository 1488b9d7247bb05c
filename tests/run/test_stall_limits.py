"""A phase's stall limit, and the check that the fixed limits end before NCCL's and vLLM's own timeouts.

    .venv/bin/python -m pytest -q tests/run/test_stall_limits.py
"""

from __future__ import annotations

import pytest

from medical_team.launcher.config.compose import compose_config
from medical_team.run.progress_record import PHASES, STARTUP, Progress
from medical_team.run.settings import WatchdogSettings, settings_from_trainer_config
from medical_team.run.stall_limits import (
    NCCL_TIMEOUT_KEY,
    VLLM_EXECUTE_TIMEOUT_DEFAULT_S,
    VLLM_EXECUTE_TIMEOUT_ENV,
    phase_limit,
    run_timeouts,
    timeout_problems,
    wait_notice,
)

SETTINGS = WatchdogSettings(
    enabled=True, k=5, floor_s=180, startup_s=1800, first_steps=2, first_steps_s=240, max_restarts=3, poll_s=5,
    kill_grace_s=20,
)  # fmt: skip


def progress(phase: str, step: int, first_step: int | None, durations: list[float]) -> Progress:
    return Progress(step, phase, 0.0, first_step, 1, 1, {phase: durations} if durations else {})


def test_start_up_and_first_steps_have_fixed_limits() -> None:
    assert phase_limit(progress(STARTUP, 0, None, []), SETTINGS) == 1800
    assert phase_limit(progress("update", 7, 7, [1.0] * 5), SETTINGS) == 240  # the attempt's first step
    assert phase_limit(progress("update", 8, 7, [1.0] * 5), SETTINGS) == 240
    assert phase_limit(progress("update", 9, 7, [1.0] * 5), SETTINGS) == 180  # k x 1 s is below the floor


def test_a_learned_phase_gets_k_times_its_median() -> None:
    assert phase_limit(progress("update", 20, 1, [50, 60, 900, 55, 58]), SETTINGS) == 5 * 58
    assert phase_limit(progress("checkpoint_save", 20, 1, []), SETTINGS) == 240  # never finished yet


def test_the_shipped_limits_end_before_nccl_and_vllm() -> None:
    for profile in ("cpu-smoke", "80g", "24g"):
        config = compose_config([f"profile={profile}"])
        timeouts = run_timeouts(config, {})
        assert timeouts == {
            NCCL_TIMEOUT_KEY: 600.0,
            f"ray_kwargs.ray_init.runtime_env.env_vars.{VLLM_EXECUTE_TIMEOUT_ENV}": 300.0,
        }
        assert timeout_problems(settings_from_trainer_config(config).watchdog, timeouts) == []


def test_a_limit_past_a_timeout_is_refused_naming_both_keys() -> None:
    late = WatchdogSettings(**{**SETTINGS.__dict__, "first_steps_s": 400})
    (problem,) = timeout_problems(late, {"ray_kwargs...VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": 300.0, NCCL_TIMEOUT_KEY: 600})
    assert problem.startswith("medplay.watchdog.first_steps_s=400 plus poll_s=5 is not below ray_kwargs")


def test_vllms_default_execute_timeout_is_the_one_assumed() -> None:
    vllm_envs = pytest.importorskip("vllm.envs")
    assert vllm_envs.environment_variables[VLLM_EXECUTE_TIMEOUT_ENV]() == VLLM_EXECUTE_TIMEOUT_DEFAULT_S


def test_a_long_wait_says_what_the_phase_waits_for() -> None:
    progress = Progress(7, "weight_sync", 0.0, 1, 1, 1, {"weight_sync": [3.0, 5.0, 4.0]})
    assert wait_notice(progress, 95.4, 180.0) == (
        "step 7 has been in weight_sync for 95 s (usually 4 s; a stall at 180 s): waiting for the FSDP actor and "
        "the rollout's vLLM server exchanging the weights"
    )
    assert "no earlier duration" in wait_notice(Progress(0, STARTUP, 0.0, None, 1, 1), 900.0, 1800.0)
    assert all(PHASES[phase].waits_for and PHASES[phase].does for phase in PHASES)
    assert wait_notice(Progress(2, "tokenizing", 0.0, 1, 1, 1), 10.0, 20.0).endswith("waiting for the processes of that phase")
