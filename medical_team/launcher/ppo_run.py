"""verl's `run_ppo` once Ray is up (ray_start.py), without importing verl in the launcher: the task runner's actor
started with `run_ppo`'s options, the config checked there as verl's `main_ppo.main` checks it, the run, the timeline.

verl 0.9.1's `main` sets the config's device and validates it before `run_ppo`, in its own process; here the task
runner's actor (medical_team/task_runner/actor.py) does both in its process, which imports verl anyway, before its
run. A config verl refuses ends the run with verl's own error and message, as when the launcher checked it itself,
only after Ray's start instead of before it. tests/launcher/test_ppo_run.py drives verl's `main` and `run_ppo` and
this module with the same recorders and checks that they make the same calls.
"""

from __future__ import annotations

from typing import Any

import ray
from omegaconf import DictConfig, OmegaConf
from ray.exceptions import RayTaskError

from medical_team.task_runner.actor import SelfPlayTaskRunner


def task_runner_options(config: DictConfig) -> dict[str, Any]:
    """The Ray options `run_ppo` starts its task runner with: Nsight's runtime env when the nsys profiler has steps
    on a CUDA host (only then is verl imported here, for its CUDA and nvtx checks)."""
    profiler = config.global_profiler
    if profiler.tool != "nsys" or not profiler.get("steps"):
        return {}
    from verl.utils.device import is_cuda_available
    from verl.utils.import_utils import is_nvtx_available

    if not is_cuda_available:
        return {}
    assert is_nvtx_available(), "nvtx is not available in CUDA platform. Please 'pip3 install nvtx'"
    nsight = OmegaConf.to_container(profiler.global_tool_config.nsys.controller_nsight_options)
    return {"runtime_env": {"nsight": nsight}}


def checked_config(runner: Any, config: DictConfig) -> DictConfig:
    """The task runner's `checked_config` of `config`; verl's own error (not Ray's wrapper) when verl refuses it."""
    try:
        return ray.get(runner.checked_config.remote(config))
    except RayTaskError as error:
        if isinstance(error.cause, Exception):
            raise error.cause from error
        raise


def run_task_runner(config: DictConfig, runner_class: Any = SelfPlayTaskRunner) -> None:
    """`run_ppo` after its `ray.init`: start the task runner, check the config there, run it, write Ray's timeline."""
    options = task_runner_options(config)
    runner = (runner_class.options(**options) if options else runner_class).remote()
    config = checked_config(runner, config)
    ray.get(runner.run.remote(config))
    timeline_json_file = config.ray_kwargs.get("timeline_json_file", None)
    if timeline_json_file:
        ray.timeline(filename=timeline_json_file)
