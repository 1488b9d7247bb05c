"""How long a phase may last before the watchdog calls it a stall, and the check that it sees a hang first.

A phase's limit is k times the median of its recent durations, or `floor_s` when that is larger; an attempt's
start-up has `startup_s`, and its first `first_steps` steps `first_steps_s` (caches warm up, and a phase seen for
the first time has no median). The fixed limits must end before the timeouts that would otherwise end a hang with
less to show for it: verl's NCCL timeout (`actor_rollout_ref.nccl_timeout`) and vLLM's execute timeout
(`VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS`), both read from the composed config.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from medical_team.run.progress_record import PHASES, STARTUP, Progress
from medical_team.run.settings import WatchdogSettings

VLLM_EXECUTE_TIMEOUT_ENV = "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS"
# vLLM's own default when the run's environment does not set it (vllm/envs.py; tests/test_verl_contracts.py).
VLLM_EXECUTE_TIMEOUT_DEFAULT_S = 300
NCCL_TIMEOUT_KEY = "actor_rollout_ref.nccl_timeout"
# A phase past this share of its limit is said on the console and in the log, once, with what it waits for.
NOTICE_SHARE = 0.5


def phase_limit(progress: Progress, settings: WatchdogSettings) -> float:
    """The seconds the phase `progress` shows may last before it is a stall."""
    if progress.phase == STARTUP:
        return settings.startup_s
    if progress.first_step is None or progress.step < progress.first_step + settings.first_steps:
        return settings.first_steps_s
    usual = progress.usual_s()
    if usual is None:  # a phase this run has not finished yet (a first save, a first validation)
        return settings.first_steps_s
    return max(settings.k * usual, settings.floor_s)


def wait_notice(progress: Progress, seconds: float, limit: float) -> str:
    """The sentence for a phase that has lasted `seconds` of its `limit`: what the run waits for, and how long."""
    usual = progress.usual_s()
    usually = f"usually {usual:.0f} s" if usual is not None else "no earlier duration"
    known = PHASES.get(progress.phase)  # a record another release wrote may name a phase this one does not know
    return (
        f"step {progress.step} has been in {progress.phase} for {seconds:.0f} s ({usually}; a stall at "
        f"{limit:.0f} s): waiting for {known.waits_for if known else 'the processes of that phase'}"
    )


def run_timeouts(config: Any, environ: Mapping[str, str]) -> dict[str, float]:
    """The timeouts of the run that end a hang by themselves: NCCL's (the config's) and vLLM's execute timeout (the
    run's env_vars, else this environment, else vLLM's default), by the key that sets each."""
    env_vars = config.ray_kwargs.ray_init.runtime_env.get("env_vars") or {}
    vllm_s = env_vars.get(VLLM_EXECUTE_TIMEOUT_ENV, environ.get(VLLM_EXECUTE_TIMEOUT_ENV, VLLM_EXECUTE_TIMEOUT_DEFAULT_S))
    return {
        NCCL_TIMEOUT_KEY: float(config.actor_rollout_ref.nccl_timeout),
        f"ray_kwargs.ray_init.runtime_env.env_vars.{VLLM_EXECUTE_TIMEOUT_ENV}": float(vllm_s),
    }


def timeout_problems(settings: WatchdogSettings, timeouts: Mapping[str, float]) -> list[str]:
    """Each fixed limit (plus one poll) that would not end before one of `timeouts`: the watchdog would see that hang
    only after the timeout had ended the run without a record."""
    problems = []
    for key, limit in (("floor_s", settings.floor_s), ("first_steps_s", settings.first_steps_s)):
        for timeout_key, timeout_s in timeouts.items():
            if limit + settings.poll_s >= timeout_s:
                problems.append(
                    f"medplay.watchdog.{key}={limit:g} plus poll_s={settings.poll_s:g} is not below "
                    f"{timeout_key}={timeout_s:g}: lower it, or raise {timeout_key}"
                )
    return problems
