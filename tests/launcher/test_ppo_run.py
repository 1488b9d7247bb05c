"""The launcher's copy of verl's `main_ppo.main` and `run_ppo` (medical_team/launcher/ppo_run.py after Ray, the task
runner's `checked_config` before the run) does what verl's own do, without verl in the launcher.

verl's `main` runs with `run_ppo` recorded, and verl's `run_ppo` with Ray's calls and the task runner's class
recorded; the copy runs with the same recorders. Both must hand the run the same config, refuse a config with the
same error, and make the same calls; verl's two functions must be the ones the copy was written from (their syntax
trees' digests), so that a verl release that changes them fails here.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import inspect
from typing import Any

import pytest
import ray
import verl.utils.device
from omegaconf import DictConfig, OmegaConf
from ray.exceptions import RayTaskError
from verl.trainer import main_ppo

from medical_team.launcher.config.compose import compose_config
from medical_team.launcher.failures.run_errors import failure_report
from medical_team.launcher.ppo_run import run_task_runner
from medical_team.task_runner.task_runner import VerlTaskRunner, checked_config

# sha256 of verl 0.9.1's `run_ppo` and `main` (trainer/main_ppo.py) as syntax trees: the copy's sources.
VERL_DIGESTS = {
    "run_ppo": "40c18e98a3b757ae97d67c9f1cbd7826f5c5eac90d8909b98489829c1657bfa8",
    "main": "5773103aaf59841b8966f85aaebcdf5ca3e05483cd6b8a359bd60e2b2aa1e690",
}
REFUSED = {
    "sampled validation at temperature 0": [
        "actor_rollout_ref.rollout.val_kwargs.do_sample=true",
        "actor_rollout_ref.rollout.temperature=0",
    ],
    "both micro-batch settings": ["actor_rollout_ref.rollout.log_prob_micro_batch_size=4"],
}


class FakeTaskRunner:
    """A task runner's Ray actor class and its actor: records how it is started and called; `ray.get` of a call runs
    the actor's method (`checked_config`: `check`)."""

    def __init__(self, events: list[tuple[Any, ...]], check: Any = lambda config: config) -> None:
        self.events = events
        self.check = check

    def options(self, **options: Any) -> FakeTaskRunner:
        self.events.append(("options", options))
        return self

    def remote(self) -> FakeTaskRunner:
        self.events.append(("start",))
        return self

    @property
    def run(self) -> Any:
        return _Method("run", self)

    @property
    def checked_config(self) -> Any:
        return _Method("checked_config", self)


class _Method:
    """`actor.<name>.remote(config)`: records the call, gives a reference `ray.get` resolves."""

    def __init__(self, name: str, runner: FakeTaskRunner) -> None:
        self.name, self.runner = name, runner

    def remote(self, config: DictConfig) -> tuple[str, FakeTaskRunner, DictConfig]:
        self.runner.events.append((self.name, OmegaConf.to_container(config)))
        return self.name, self.runner, config


def fake_get(reference: tuple[str, FakeTaskRunner, DictConfig]) -> Any:
    """Ray's `get` of a recorded call: the checked config for `checked_config`, None for `run`."""
    name, runner, config = reference
    runner.events.append(("get", name))
    return runner.check(config) if name == "checked_config" else None


@pytest.fixture
def recorded_ray(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Ray up already (so `run_ppo` skips its `ray.init`: tests/launcher/test_ray_start.py), `get` and `timeline`
    recorded into the list returned."""
    events: list[tuple[Any, ...]] = []
    for name in ("VERL_FULL_DETERMINISM", "VLLM_BATCH_INVARIANT", "PYTHONHASHSEED", "VERL_RL_INSIGHT_ENABLE"):
        monkeypatch.setenv(name, "")  # run_ppo exports them: restored afterwards
    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    monkeypatch.setattr(ray, "get", fake_get)
    monkeypatch.setattr(ray, "timeline", lambda filename: events.append(("timeline", filename)))
    return events


def syntax_digest(function: Any) -> str:
    """sha256 of a function's syntax tree (its source but for comments and layout)."""
    return hashlib.sha256(ast.dump(ast.parse(inspect.getsource(inspect.unwrap(function)))).encode()).hexdigest()


def verls_main(config: DictConfig, monkeypatch: pytest.MonkeyPatch) -> tuple[DictConfig, Any]:
    """The config and the task runner class verl's `main` hands `run_ppo` (recorded, not run)."""
    handed: list[tuple[DictConfig, Any]] = []
    monkeypatch.setattr(
        main_ppo, "run_ppo", lambda config, task_runner_class: handed.append((config, task_runner_class))
    )
    inspect.unwrap(main_ppo.main)(config)
    assert len(handed) == 1
    return handed[0]


def test_the_task_runner_checks_the_config_as_verls_main_does(monkeypatch: pytest.MonkeyPatch) -> None:
    config = compose_config(["profile=cpu-smoke"])
    verls, task_runner_class = verls_main(copy.deepcopy(config), monkeypatch)
    assert OmegaConf.to_container(checked_config(copy.deepcopy(config))) == OmegaConf.to_container(verls)
    assert task_runner_class is main_ppo.TaskRunnerV1  # trainer.use_v1: medplay's runner is verl's V1 one
    assert issubclass(VerlTaskRunner, main_ppo.TaskRunnerV1.__ray_actor_class__)


@pytest.mark.parametrize("overrides", REFUSED.values(), ids=REFUSED.keys())
def test_a_config_verl_refuses_ends_the_run_with_verls_own_error_and_line(
    overrides: list[str], recorded_ray: list[tuple[Any, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As when the launcher checked the config itself: the same error (not Ray's wrapper) and `medplay train`'s same
    last line; the run is never called."""
    config = compose_config(["profile=cpu-smoke", *overrides])
    with pytest.raises(Exception) as verls:
        verls_main(copy.deepcopy(config), monkeypatch)

    def check_as_ray_reports_it(config: DictConfig) -> DictConfig:
        try:
            return checked_config(config)
        except Exception as error:  # noqa: BLE001 - whatever verl raises, Ray carries it so
            raise RayTaskError("SelfPlayTaskRunner.checked_config", "Traceback: ...", error).as_instanceof_cause()

    with pytest.raises(Exception) as ours:
        run_task_runner(config, FakeTaskRunner(recorded_ray, check_as_ray_reports_it))
    assert type(ours.value) is type(verls.value) and str(ours.value) == str(verls.value)
    assert failure_report(ours.value) == failure_report(verls.value)
    assert ("run", OmegaConf.to_container(config)) not in recorded_ray


@pytest.mark.parametrize(
    ("overrides", "cuda"),
    [
        (["profile=cpu-smoke"], False),
        (["profile=cpu-smoke", "ray_kwargs.timeline_json_file=/tmp/timeline.json"], False),
        (["profile=80g", "global_profiler.tool=nsys", "global_profiler.steps=[1,2]"], True),
        (["profile=80g", "global_profiler.tool=nsys", "global_profiler.steps=[1,2]"], False),
    ],
    ids=["cpu-smoke", "timeline", "nsys-on-cuda", "nsys-without-cuda"],
)
def test_the_task_runner_is_started_and_run_as_verls_run_ppo_does(
    overrides: list[str], cuda: bool, recorded_ray: list[tuple[Any, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same options, calls and timeline; the copy checks the config in the actor between its start and run."""
    monkeypatch.setattr(main_ppo, "is_cuda_available", cuda)
    monkeypatch.setattr(verl.utils.device, "is_cuda_available", cuda)
    config = compose_config(overrides)
    main_ppo.run_ppo(copy.deepcopy(config), task_runner_class=FakeTaskRunner(recorded_ray))
    verls = list(recorded_ray)
    recorded_ray.clear()
    run_task_runner(config, FakeTaskRunner(recorded_ray))
    checking = [("checked_config", OmegaConf.to_container(config)), ("get", "checked_config")]
    started = recorded_ray.index(("start",)) + 1
    assert recorded_ray[started : started + 2] == checking
    assert recorded_ray[:started] + recorded_ray[started + 2 :] == verls
    assert any(event[0] == "options" for event in verls) == cuda  # Nsight's runtime env on a CUDA host only


@pytest.mark.parametrize("name", VERL_DIGESTS)
def test_verls_main_and_run_ppo_are_the_ones_the_copy_was_written_from(name: str) -> None:
    """A verl release that changes either in any way but comments: compare it with medical_team/launcher/ppo_run.py,
    ray_start.py and task_runner/task_runner.py (`checked_config`), port what changed, then update the digest."""
    assert syntax_digest(getattr(main_ppo, name)) == VERL_DIGESTS[name]
