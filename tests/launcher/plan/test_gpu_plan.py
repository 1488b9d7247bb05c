"""The run plan's GPUs (medical_team/launcher/plan/gpu_plan.py): every shipped profile planned for 1, 2, 4 and 8 GPUs, the
refusal of more GPUs than the host has, a mixed host, and the served judge started on its own GPU.

Run: .venv/bin/python -m pytest -q tests/launcher/plan/test_gpu_plan.py
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import SimpleNamespace

import pytest
from judge_folders import medgemma_folder
from models_endpoint import models_server_code
from omegaconf import DictConfig
from processes import free_port
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.utils.config import validate_config

from medical_team.common.errors import UserInputError
from medical_team.hardware.host_facts import GpuFacts
from medical_team.launcher.config.compose import available_profiles, compose_config
from medical_team.launcher.config.verl_keys import check_config
from medical_team.launcher.plan.run_plan import RunPlan, derive_run_plan, plan_run, planned_config
from medical_team.plugin.cpu.patches import patch_vllm_version_lookup
from medical_team.run.settings import SelfPlaySettings

GPU_PROFILES = [name for name in available_profiles() if name != "cpu-smoke"]
# Each GPU profile's own card (configs/profile/NAME.yaml's medplay.hardware.card_gib).
CARDS = {"24g": ("NVIDIA L4", 22.0), "48g": ("NVIDIA L40S", 44.4), "80g": ("NVIDIA H100 80GB HBM3", 79.2),
         "96g": ("NVIDIA H100 NVL", 93.0), "141g": ("NVIDIA H200", 139.8)}  # fmt: skip
RAY_VISIBLE = "CUDA_VISIBLE_DEVICES"


def gpus(count: int, name: str = "NVIDIA H100 80GB HBM3", vram_gib: float = 79.2, first: int = 0) -> list[GpuFacts]:
    """`count` identical GPUs as NVML lists them, from index `first`, each with its UUID."""
    return [GpuFacts(index, name, "9.0", vram_gib, vram_gib - 0.4, True, None, f"GPU-{index:04d}")
            for index in range(first, first + count)]  # fmt: skip


@pytest.fixture
def judge(tmp_path: Path) -> str:
    """The override naming a MedGemma-shaped judge folder (the GPU profiles serve their judge)."""
    return f"medplay.judge.model={medgemma_folder(tmp_path)}"


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[DictConfig, SelfPlaySettings]]:
    """Each profile's composed and checked config with a judge folder that exists, composed once for every count."""
    model = medgemma_folder(tmp_path_factory.mktemp("judge"))

    @cache
    def config(profile: str) -> tuple[DictConfig, SelfPlaySettings]:
        composed = compose_config([f"profile={profile}", f"medplay.judge.model={model}"])
        return composed, check_config(composed)

    return config


def planned(composed: DictConfig, settings: SelfPlaySettings, host: list[GpuFacts]) -> tuple[DictConfig, RunPlan]:
    """What `plan_config` does after its checks: the plan derived for this host, applied to a copy."""
    plan = derive_run_plan(composed, settings, gpus=host)
    return planned_config(composed, plan), plan


@pytest.mark.parametrize("count", [1, 2, 4, 8])
@pytest.mark.parametrize("profile", GPU_PROFILES)
def test_a_gpu_profile_trains_on_every_gpu_but_the_judges(profile, count, checked, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    name, vram = CARDS[profile]
    composed, settings = checked(profile)
    config, plan = planned(composed, settings, gpus(count, name, vram))
    run, policy = SimpleNamespace(config=config, plan=plan), max(count - 1, 1)

    assert config.trainer.n_gpus_per_node == policy == config.ray_kwargs.ray_init.num_gpus
    # The profile's games per step are for one GPU: they scale with the policy's GPUs, and so does the mini-batch.
    assert config.data.train_batch_size == composed.data.train_batch_size * policy
    assert (
        config.actor_rollout_ref.actor.ppo_mini_batch_size
        == composed.actor_rollout_ref.actor.ppo_mini_batch_size * policy
    )
    # The judge's process gets its own GPU, the last; on one GPU it inherits the launcher's (beside the policy).
    assert run.plan.judge_devices == (None if count == 1 else f"GPU-{count - 1:04d}")
    assert RAY_VISIBLE not in config.ray_kwargs.ray_init.runtime_env.env_vars  # the policy's GPUs come first
    (line,) = [line for line in run.plan.lines if line.startswith("GPUs: ")]
    if count == 1:
        assert line.endswith(f"the judge's vLLM beside it on GPU 0; {config.data.train_batch_size * 4} games a step "
                             f"(data.train_batch_size {config.data.train_batch_size} x rollout.n 4)")  # fmt: skip
    else:
        assert f"the judge's vLLM on GPU {count - 1} of its own" in line
    if policy > 1:
        assert f"the profile's {composed.data.train_batch_size} for each of {policy} GPUs" in line
    # verl's own check of the planned numbers passes (its runtime splits: hardware/gpu_batches.py).
    patch_vllm_version_lookup()
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))


@pytest.mark.parametrize("count", [1, 2, 4, 8])
def test_cpu_smoke_trains_on_as_many_fake_gpus_as_named(count, checked, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    composed, settings = checked("cpu-smoke")
    composed = composed.copy()
    composed.trainer.n_gpus_per_node = count
    plan = derive_run_plan(composed, settings, named={"trainer.n_gpus_per_node"})
    config, run = planned_config(composed, plan), SimpleNamespace(plan=plan)
    assert config.trainer.n_gpus_per_node == count == config.ray_kwargs.ray_init.num_gpus  # Ray's fake GPUs
    assert config.data.train_batch_size == config.actor_rollout_ref.actor.ppo_mini_batch_size == 4 * count
    # Each rank gets the 4 samples of a mini-batch one rank got: the micro-batches of 4 still divide them.
    assert config.actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu == 4
    assert run.plan.judge_devices is None
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    if count == 1:  # one rank: the plan says nothing new
        assert not [line for line in run.plan.lines if "FSDP ranks" in line]


def test_the_runs_own_batches_are_kept_and_checked(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    kept = plan_run(["profile=cpu-smoke", "trainer.n_gpus_per_node=2", "data.train_batch_size=6",
                     "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
                     "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2",
                     "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2"]).config  # fmt: skip
    assert kept.data.train_batch_size == 6 and kept.actor_rollout_ref.actor.ppo_mini_batch_size == 4
    with pytest.raises(UserInputError) as raised:  # the first try: verl asserted mid-step, after the rollout
        plan_run(["profile=cpu-smoke", "trainer.n_gpus_per_node=2", "data.train_batch_size=4"])
    message = raised.value.one_line()
    assert message.startswith("field 'trainer.n_gpus_per_node': the step does not split over the policy's 2 GPU(s): ")
    assert "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 does not divide the 2 samples" in message
    assert "set it to 2" in message


def test_more_gpus_than_the_host_has_are_refused_before_anything_starts(judge, tmp_path):
    with pytest.raises(UserInputError) as raised:
        plan_run(["profile=80g", judge, "trainer.n_gpus_per_node=8", f"medplay.output_dir={tmp_path}"], gpus=gpus(4))
    assert raised.value.field == "trainer.n_gpus_per_node"
    assert raised.value.message.startswith("8 GPUs asked for; this host has 4: 4 x NVIDIA H100 80GB HBM3")
    with pytest.raises(UserInputError, match="no GPU found"):
        plan_run(["profile=80g", judge], gpus=[])


def test_a_named_count_takes_the_first_gpus_and_the_judge_the_next(judge, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    run = plan_run(["profile=80g", judge, "trainer.n_gpus_per_node=2"], gpus=gpus(8))
    assert run.config.trainer.n_gpus_per_node == 2 and run.plan.judge_devices == "GPU-0002"
    (line,) = [line for line in run.plan.lines if line.startswith("GPUs: ")]
    assert (
        "the policy on GPU 0, 1 (2 FSDP ranks, a vLLM rollout replica each)" in line
        and "on GPU 2 of its own; 5 GPUs idle" in line
    )
    shared = plan_run(["profile=80g", judge, "trainer.n_gpus_per_node=4"], gpus=gpus(4))
    assert shared.plan.judge_devices == "GPU-0000"  # every GPU trains: the judge beside the policy's first


def test_a_mixed_host_trains_on_its_largest_set_and_ray_sees_only_the_policys_gpus(judge, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    host = [*gpus(1, "NVIDIA GeForce RTX 4090", 23.6), *gpus(3, first=1)]  # a display card, then three H100s
    run = plan_run(["profile=80g", judge], gpus=host)
    env_vars = run.config.ray_kwargs.ray_init.runtime_env.env_vars
    assert run.config.trainer.n_gpus_per_node == 2 and run.config.ray_kwargs.ray_init.num_gpus == 2
    # Ray's GPU slots 0 and 1 would be GPU 0 and 1: the cluster sees the policy's two H100s only.
    assert env_vars[RAY_VISIBLE] == "GPU-0001,GPU-0002" and run.plan.judge_devices == "GPU-0003"
    (line,) = [line for line in run.plan.lines if line.startswith("GPUs: ")]
    assert "3 x NVIDIA H100 80GB HBM3 (79.2 GiB each; GPU 1, 2, 3); left out, not of this model: GPU 0" in line
    # Joining a cluster (RAY_ADDRESS): its GPUs are the cluster's to declare.
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6379")
    joined = plan_run(["profile=80g", judge], gpus=host).config
    assert (
        joined.ray_kwargs.ray_init.num_gpus is None
        and RAY_VISIBLE not in joined.ray_kwargs.ray_init.runtime_env.env_vars
    )
    assert joined.trainer.n_gpus_per_node == 2


@pytest.mark.parametrize(("count", "device"), [(4, "GPU-0003"), (1, None)])
def test_the_judges_server_is_started_with_its_gpu(count, device, tmp_path, judge, monkeypatch):
    from medical_team.launcher.judge import served_judge, served_judge_plan

    monkeypatch.setenv(RAY_VISIBLE, "inherited")  # what the launcher's own process sees
    port = free_port()
    # The stand-in for vLLM says which GPUs it was started with, then answers like it.
    stand_in = "import os; print('devices', os.environ.get('CUDA_VISIBLE_DEVICES'), flush=True)\n"
    stand_in += models_server_code(port, tmp_path)
    monkeypatch.setattr(served_judge, "vllm_command", lambda *args, **kwargs: [sys.executable, "-c", stand_in])
    monkeypatch.setattr(served_judge_plan, "served_judge_port", lambda: port)
    run = plan_run(["profile=80g", judge, f"medplay.output_dir={tmp_path}"], gpus=gpus(count))
    assert served_judge.judge_environment(run).get(RAY_VISIBLE) == device
    with served_judge.serve_judge(run) as server:
        assert server.ready.wait(60)
        log = server.log_file.read_text()
    assert f"devices {device or 'inherited'}" in log
