"""The GPU's memory at launch: `medplay.emulate_gpu_gib` (medical_team/launcher/plan/card_emulation.py; the workers' cap,
medical_team/plugin/gpu_cap.py) and both vLLM engines' KV caches in bytes from the memory plan
(medical_team/launcher/plan/kv_caches.py), as the run plan applies them."""

from __future__ import annotations

from pathlib import Path

import pytest
from judge_folders import medgemma_folder

from medical_team.common.errors import UserInputError
from medical_team.launcher.config.compose import compose_config
from medical_team.launcher.judge.served_judge_command import vllm_command
from medical_team.launcher.plan.card_emulation import card_emulation
from medical_team.launcher.plan.host_plan import compose_plan
from medical_team.launcher.plan.kv_caches import kv_cache_sizes
from medical_team.launcher.plan.run_plan import derive_run_plan, plan_run
from medical_team.plugin.gpu_cap import cap_this_worker
from medical_team.run.emulated_card import FRACTION_ENV
from medical_team.run.settings import settings_from_trainer_config


@pytest.fixture
def judge(tmp_path: Path) -> str:
    """The override naming a MedGemma-shaped judge folder (the GPU profiles serve their judge)."""
    return f"medplay.judge.model={medgemma_folder(tmp_path)}"


def test_the_48g_profile_on_an_80_gib_card_gets_its_shares_scaled_and_the_workers_cap(judge):
    composed = compose_config(["profile=48g", "medplay.emulate_gpu_gib=48"])
    rollout_share = composed.actor_rollout_ref.rollout.gpu_memory_utilization
    judge_share = composed.medplay.judge.serve.gpu_memory_utilization

    run = plan_run(["profile=48g", "medplay.emulate_gpu_gib=48", judge], total_gib=80.0)
    config, (line,) = run.config, [line for line in run.plan.lines if "emulating" in line]

    assert config.actor_rollout_ref.rollout.gpu_memory_utilization == pytest.approx(rollout_share * 0.6, abs=1e-4)
    assert config.medplay.judge.serve.gpu_memory_utilization == pytest.approx(judge_share * 0.6, abs=1e-4)
    assert config.ray_kwargs.ray_init.runtime_env.env_vars[FRACTION_ENV] == "0.600000"
    assert "48 GiB card" in line and "0.600" in line
    # The judge's server reads its share from the settings, which see the scaled value.
    assert run.settings.judge.serve.gpu_memory_utilization == pytest.approx(
        judge_share * 0.6, abs=1e-4
    )


def test_without_the_setting_nothing_changes():
    config = compose_config(["profile=48g"])
    assert card_emulation(config, on_cpu=False, total_gib=80.0) == ({}, None)


def test_on_the_cpu_the_setting_is_a_noted_no_op():
    run = plan_run(["profile=cpu-smoke", "medplay.emulate_gpu_gib=24"])
    assert any("no effect on the CPU" in line for line in run.plan.lines)
    assert FRACTION_ENV not in run.config.ray_kwargs.ray_init.runtime_env.env_vars


def test_a_cap_not_smaller_than_the_card_is_refused():
    config = compose_config(["profile=80g", "medplay.emulate_gpu_gib=96"])
    with pytest.raises(UserInputError, match="medplay.emulate_gpu_gib.*not smaller than this GPU's 79.2 GiB"):
        card_emulation(config, on_cpu=False, total_gib=79.2)


def test_a_bad_value_is_named_before_ray():
    config = compose_config(["profile=48g", "medplay.emulate_gpu_gib=-4"])
    with pytest.raises(UserInputError, match="medplay.emulate_gpu_gib: -4 must be null or a number of GiB > 0"):
        settings_from_trainer_config(config)


def test_outside_a_gpu_worker_the_cap_is_not_applied(monkeypatch):
    monkeypatch.setenv(FRACTION_ENV, "0.5")
    assert cap_this_worker() is None  # no Ray worker holding a GPU here
    monkeypatch.delenv(FRACTION_ENV)
    assert cap_this_worker() is None


def test_both_engines_get_the_plans_kv_bytes_for_the_emulated_card_and_keep_them_when_shares_are_scaled(judge):
    # As `medplay train profile=80g medplay.emulate_gpu_gib=79` on the H200 (140.4 GiB): size, then emulate.
    run = plan_run(["profile=80g", "medplay.emulate_gpu_gib=79", judge], total_gib=140.4)
    line = run.plan.lines[0]

    planned = compose_plan("80g", ["medplay.emulate_gpu_gib=79", judge], 140.4).kv_cache
    rollout_bytes = run.config.actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_memory_bytes
    judge = run.settings.judge.serve
    assert rollout_bytes == planned["rollout"]["kv_cache_bytes"]
    assert judge.kv_cache_memory_bytes == planned["judge"]["kv_cache_bytes"]
    assert line == (
        "vLLM KV caches from the memory plan on a 79.0 GiB card, in bytes (no profiling): "
        f"rollout {rollout_bytes / 2**30:.2f} GiB, judge {judge.kv_cache_memory_bytes / 2**30:.2f} GiB"
    )
    # The shares, scaled to this GPU, are left to vLLM's start-up check that they are free.
    command = vllm_command(Path("/m"), 9000, judge, on_cpu=False)
    assert command[command.index("--kv-cache-memory-bytes") + 1] == str(planned["judge"]["kv_cache_bytes"])
    assert command[command.index("--gpu-memory-utilization") + 1] == str(round(0.2 * 79 / 140.4, 4))


def test_a_kv_cache_given_in_bytes_is_kept_and_the_cpu_is_left_alone(judge):
    config = plan_run(["profile=48g", "medplay.judge.serve.kv_cache_memory_bytes=2147483648", judge], total_gib=44.4).config
    assert config.medplay.judge.serve.kv_cache_memory_bytes == 2**31
    rollout_bytes = config.actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_memory_bytes
    assert rollout_bytes == compose_plan("48g", [judge], 44.4).kv_cache["rollout"]["kv_cache_bytes"]
    smoke = compose_config(["profile=cpu-smoke", "medplay.judge.backend=vllm"])
    rules = compose_config(["profile=cpu-smoke"])  # the run plan leaves a CPU run's KV caches as the profile gives them
    cpu_plan = derive_run_plan(rules, settings_from_trainer_config(rules))
    assert cpu_plan.on_cpu and not [key for key in cpu_plan.changes if key.endswith("kv_cache_memory_bytes")]
    assert smoke.actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_memory_bytes == 256 * 2**20
    assert smoke.medplay.judge.serve.kv_cache_memory_bytes == 64 * 2**20


def test_a_share_that_leaves_an_engine_no_kv_cache_stops_the_run_before_ray():
    config = compose_config(["profile=80g", "medplay.judge.serve.gpu_memory_utilization=0.1"])
    with pytest.raises(UserInputError, match=r"the judge vLLM share \(0.1 x 79.2 GiB\) .* raise medplay.judge.serve"):
        kv_cache_sizes(config, settings_from_trainer_config(config).judge, 79.2)
