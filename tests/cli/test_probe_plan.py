"""`medplay probe` on hosts with several GPUs: the profile and the checks of the GPUs the run uses, and `--plan`'s
GPUs (medical_team/cli/probe_plan.py): what runs on each for this host's count and for `--gpus N`.

Run: .venv/bin/python -m pytest -q tests/cli/test_probe_plan.py
"""

from __future__ import annotations

import json

import pytest

from medical_team.cli import main
from medical_team.cli.probe import ray_head_gpus
from medical_team.hardware.host_facts import GpuFacts, HostFacts, PackageFacts
from medical_team.hardware.probe import assess
from medical_team.launcher.plan.host_plan import checked_config, compose_plan, host_plan

H100 = ("NVIDIA H100 80GB HBM3", 79.2)
RTX4090 = ("NVIDIA GeForce RTX 4090", 23.6)


def host(*models: tuple[str, float]) -> HostFacts:
    """A host where the GPU stack works, with these GPUs as torch lists them."""
    gpus = [GpuFacts(index, name, "9.0", vram, vram - 0.5, True, True) for index, (name, vram) in enumerate(models)]
    return HostFacts(
        driver_version="580.95.05", driver_cuda="13.0", torch_version="2.11.0+cu130", torch_cuda="13.0",
        torch_arch_list=["sm_90"], cuda_available=True, cuda_error=None, gpus=gpus, nccl_version="2.28.9",
        flash_attn=PackageFacts(True, "2.8.3"), vllm=PackageFacts(True, "0.24.0"), shm_total_gib=64.0,
        checkpoints_dir="/checkpoints", checkpoints_free_gib=500.0, cpu_count=32, ram_total_gib=256.0,
        ram_available_gib=240.0,
    )  # fmt: skip


def test_a_mixed_host_is_assessed_on_the_gpus_the_run_uses():
    # A 24 GB display card first, then three H100s: the run trains on the H100s, so the profile is theirs (80g).
    facts = host(RTX4090, H100, H100, H100)
    planned = host_plan(*checked_config("80g", []), facts.gpus, named=())
    report = assess(facts, checkpoint_gib=17.0, plan=planned.plan, gpus_used=planned.to_json_dict())
    assert report.ok and report.profile == "80g" and report.profile_source == "auto"
    used = report.to_json_dict()["gpus_used"]
    assert (used["count"], used["policy_gpus"], used["judge_gpu"], used["games_per_step"]) == (3, 2, 3, 64)
    assert [row["runs"] for row in used["per_gpu"]] == [
        "left out (NVIDIA GeForce RTX 4090: not of the set's model)",
        "policy: FSDP rank 0, vLLM rollout replica 0",
        "policy: FSDP rank 1, vLLM rollout replica 1",
        "the judge's vLLM",
    ]
    (note,) = [note for note in report.notes if note.startswith("GPUs: ")]
    assert "the policy on GPU 1, 2 (2 FSDP ranks" in note and "the judge's vLLM on GPU 3 of its own" in note
    # The memory plan of a policy GPU no longer holds the judge's share, and its training state is sharded.
    assert "judge_vllm_share" not in report.plan["phases"]["rollout"]["terms"]
    assert any("1/2 on each GPU (FSDP shards)" in line for line in report.plan["notes"])


def plan_json(tmp_path, *args: str) -> dict:
    """`medplay probe --plan ARGS`'s plan.json (exit status 0 required)."""
    output = tmp_path / "plan.json"
    assert main(["probe", "--plan", "--output", str(output), *args]) == 0
    return json.loads(output.read_text())


@pytest.mark.parametrize("count", [1, 2, 4, 8])
def test_the_plan_shows_what_runs_on_each_of_n_gpus(tmp_path, count):
    plan = plan_json(tmp_path, "--gpus", str(count), "profile=80g")
    gpus = plan["gpus"]
    policy = max(count - 1, 1)
    assert (gpus["count"], gpus["policy_gpus"], gpus["games_per_step"]) == (count, policy, 32 * policy)
    assert gpus["judge_gpu"] == (None if count == 1 else count - 1)
    assert gpus["judge_beside_policy"] is (count == 1) and plan["fits"] is True
    rows = gpus["per_gpu"]
    assert [row["gpu"] for row in rows] == list(range(count))
    one_gpu = round(compose_plan("80g", [], 79.2).peak.peak_gib, 2)  # the single-GPU plan, judge beside the policy
    if count == 1:
        assert rows[0]["runs"].endswith(", the judge's vLLM") and rows[0]["peak_gib"] == plan["peak_gib"] == one_gpu
    else:
        assert rows[-1] | {"vram_gib": None} == {"gpu": count - 1, "runs": "the judge's vLLM", "peak_phase": "every phase",
                                                 "peak_gib": 15.84, "vram_gib": None, "fraction": 0.2}  # fmt: skip
        assert {row["peak_gib"] for row in rows[:-1]} == {plan["peak_gib"]} and plan["peak_gib"] < one_gpu


def test_more_gpus_than_there_are_and_gpus_without_plan_are_refused(tmp_path, capsys):
    output = str(tmp_path / "plan.json")
    assert main(["probe", "--plan", "--output", output, "--gpus", "2", "profile=80g", "trainer.n_gpus_per_node=4"]) == 2
    assert "field 'trainer.n_gpus_per_node': 4 GPUs asked for; this host has 2: 2 x " in capsys.readouterr().err
    assert main(["probe", "--output", output, "--gpus", "4"]) == 2
    assert "--gpus plans for that many GPUs: it goes with --plan" in capsys.readouterr().err


@pytest.mark.parametrize(("count", "overrides", "declared"), [(4, [], ["ray_kwargs.ray_init.num_gpus=3"]), (1, [], []),
                                                              (4, ["medplay.judge.backend=rules"], [])])  # fmt: skip
def test_the_appliances_ray_head_declares_the_policys_gpus_only(count, overrides, declared):
    # The probe's run overrides reach the pipeline's Ray head (`medplay config get ray_kwargs.ray_init.num_gpus`):
    # 3 of 4 GPUs, so Ray's slots 0-2 are GPUs 0-2 and the judge's GPU 3 stays its own; nothing when every GPU trains.
    facts = host(*[H100] * count)
    planned = host_plan(*checked_config("80g", overrides), facts.gpus, named=())
    assert ray_head_gpus(planned) == declared
    assert ray_head_gpus(None) == []
