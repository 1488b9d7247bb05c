"""The run plan (medical_team/launcher/plan/run_plan.py): derived once before Ray, applied to a copy, then only read."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest
from judge_folders import served_judge_run
from omegaconf import OmegaConf
from omegaconf.errors import ReadonlyConfigError

import medical_team
from medical_team.launcher.config.compose import compose_config
from medical_team.launcher.plan.run_plan import derive_run_plan, plan_run, planned_config, ray_cluster
from medical_team.run.settings import settings_from_trainer_config

PACKAGE = Path(medical_team.__file__).resolve().parent
# Where a config may still be written: composing it (compose.compose_config) and applying the plan.
WRITERS = {"launcher/config/compose.py", "launcher/plan/run_plan.py"}


def test_the_planned_medplay_section_is_read_only_here_and_in_every_worker(tmp_path: Path) -> None:
    config = served_judge_run(tmp_path).config
    with pytest.raises(ReadonlyConfigError):
        config.medplay.judge.url = "http://elsewhere/v1"
    shipped = pickle.loads(pickle.dumps(config))  # as Ray hands it to verl's workers
    with pytest.raises(ReadonlyConfigError):
        shipped.medplay.judge.model = "/other"
    shipped.trainer.total_training_steps = 2  # verl's own sections stay verl's to change


def test_deriving_the_plan_leaves_the_composed_config_as_it_was() -> None:
    composed = compose_config(["medplay.judge.backend=rules"])
    before = OmegaConf.to_yaml(composed)
    plan = derive_run_plan(composed, settings_from_trainer_config(composed))
    planned = planned_config(composed, plan)
    assert OmegaConf.to_yaml(composed) == before
    assert planned.ray_kwargs.ray_init.address == "local" and plan.ray_cluster == "a new local cluster"


def test_the_served_judges_address_is_fixed_before_anything_starts(tmp_path: Path) -> None:
    run = served_judge_run(tmp_path, "medplay.judge.serve.port=8123")
    config, judge = run.config, run.settings.judge
    assert config.medplay.judge.url == judge.url == "http://127.0.0.1:8123/v1"
    assert judge.model == str((tmp_path / "judge-model").resolve())
    free = plan_run([f"medplay.output_dir={tmp_path}", "medplay.judge.backend=vllm",
                     f"medplay.judge.model={tmp_path / 'judge-model'}"]).settings.judge  # fmt: skip
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", free.url)


def test_a_joined_cluster_gets_no_resources_and_a_new_one_is_private() -> None:
    assert ray_cluster({"RAY_ADDRESS": "10.0.0.2:6379"}) == (
        {
            "ray_kwargs.ray_init.num_cpus": None,
            "ray_kwargs.ray_init.num_gpus": None,
            "ray_kwargs.ray_init._system_config": None,
        },
        "10.0.0.2:6379",
    )
    assert ray_cluster({}) == ({"ray_kwargs.ray_init.address": "local"}, "a new local cluster")


def modules_matching(pattern: re.Pattern[str]) -> set[str]:
    """The package's modules (paths relative to it) whose source matches `pattern`."""
    return {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if pattern.search(path.read_text(encoding="utf-8"))
    }


def test_no_module_but_composing_and_planning_writes_to_a_config() -> None:
    writes = re.compile(r"open_dict\(|OmegaConf\.update\(")
    found = modules_matching(writes)
    assert found <= WRITERS, found - WRITERS


def test_cpu_or_gpu_is_decided_in_the_run_plan_only() -> None:
    reads_device = re.compile(r"trainer\.device|trainer\.get\(\"device\"|\"device\", \"cuda\"")
    found = modules_matching(reads_device)
    assert found == {"launcher/plan/run_plan.py"}


def test_the_vllm_engines_config_keys_are_written_out_in_one_module() -> None:
    key = re.compile(
        r"\"(actor_rollout_ref\.rollout\.(gpu_memory_utilization|engine_kwargs\.vllm\.kv_cache_memory_bytes)"
        r"|medplay\.judge\.serve\.(gpu_memory_utilization|kv_cache_memory_bytes))\""
    )
    found = modules_matching(key)
    assert found == {"hardware/plan_inputs.py"}


def test_a_cpu_run_is_planned_as_one_and_sizes_no_kv_cache() -> None:
    composed = compose_config(["profile=cpu-smoke"])
    plan = derive_run_plan(composed, settings_from_trainer_config(composed))
    assert plan.on_cpu and not [key for key in plan.changes if key.endswith("kv_cache_memory_bytes")]
    gpu = compose_config(["profile=80g", "medplay.judge.backend=rules"])
    assert not derive_run_plan(gpu, settings_from_trainer_config(gpu), total_gib=79.2).on_cpu


def test_the_disk_floor_is_one_estimated_checkpoint_unless_given(tmp_path: Path) -> None:
    from medical_team.launcher.plan.disk_plan import config_checkpoint_parts
    from medical_team.models.shape import GIB

    planned = plan_run([f"medplay.output_dir={tmp_path}"])
    one = round(sum(config_checkpoint_parts(planned.config).values()) / GIB, 3)
    assert planned.config.medplay.resources.disk_floor_gib == one > 0
    given = plan_run([f"medplay.output_dir={tmp_path}", "medplay.resources.disk_floor_gib=2.5"])
    assert given.config.medplay.resources.disk_floor_gib == 2.5
