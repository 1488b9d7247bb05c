"""The host's GPUs a run uses and what runs on each (medical_team/hardware/gpu_set.py), and CUDA_VISIBLE_DEVICES'
narrowing of nvidia-smi's listing (host_facts.visible_gpus).

Run: .venv/bin/python -m pytest -q tests/hardware/test_gpu_set.py
"""

from __future__ import annotations

import pytest

from medical_team.common.errors import UserInputError
from medical_team.hardware.gpu_set import device_id, gpu_set, placement
from medical_team.hardware.host_facts import GpuFacts, visible_gpus

H100 = ("NVIDIA H100 80GB HBM3", 79.2)
L40S = ("NVIDIA L40S", 44.4)
RTX4090 = ("NVIDIA GeForce RTX 4090", 23.6)


def host(*models: tuple[str, float]) -> list[GpuFacts]:
    """GPUs as nvidia-smi lists them, in index order, each with its UUID."""
    return [
        GpuFacts(index, name, "9.0", vram, vram - 0.5, None, None, f"GPU-{index:08x}-aaaa")
        for index, (name, vram) in enumerate(models)
    ]


def test_every_gpu_of_one_model_is_the_set():
    chosen = gpu_set(host(*[H100] * 4))
    assert chosen.count == 4 and chosen.name == H100[0] and chosen.vram_gib == 79.2 and not chosen.left_out
    assert chosen.describe() == "4 x NVIDIA H100 80GB HBM3 (79.2 GiB each; GPU 0, 1, 2, 3)"
    assert gpu_set([]) is None


def test_a_mixed_host_uses_its_largest_set_of_identical_gpus_and_names_the_others():
    chosen = gpu_set(host(RTX4090, L40S, L40S, H100))
    assert [gpu.index for gpu in chosen.gpus] == [1, 2] and chosen.name == L40S[0]
    assert chosen.describe() == (
        "2 x NVIDIA L40S (44.4 GiB each; GPU 1, 2); left out, not of this model: "
        "GPU 0 (NVIDIA GeForce RTX 4090, 23.6 GiB), GPU 3 (NVIDIA H100 80GB HBM3, 79.2 GiB)"
    )
    # Sets of one size: the larger GPUs; of one size and memory: the first seen.
    assert [gpu.index for gpu in gpu_set(host(RTX4090, H100)).gpus] == [1]
    assert [gpu.index for gpu in gpu_set(host(L40S, ("NVIDIA RTX 6000 Ada Generation", 44.4))).gpus] == [0]


@pytest.mark.parametrize(
    ("value", "indices"),
    [(None, [0, 1, 2, 3]), ("", []), ("2,0", [2, 0]), ("3, 1", [3, 1]), ("GPU-00000002-aaaa,1", [2, 1]),
     ("GPU-00000003", [3]), ("1,7,2", [1]), ("GPU-0000", []), ("1,1", [1])],
)  # fmt: skip
def test_cuda_visible_devices_narrows_the_listing_as_cuda_does(value, indices):
    # Indices (nvidia-smi's) or UUIDs, a unique prefix enough; the list ends at the first entry naming no GPU.
    assert [gpu.index for gpu in visible_gpus(host(*[H100] * 4), value)] == indices


@pytest.mark.parametrize(
    ("available", "requested", "served", "policy", "judge_gpu", "idle"),
    [
        (1, None, True, 1, None, 0),  # one GPU: the judge beside the policy, as on every one-GPU host
        (2, None, True, 1, 1, 0),  # from two GPUs on: a GPU of its own, the last
        (4, None, True, 3, 3, 0),
        (8, None, True, 7, 7, 0),
        (8, None, False, 8, None, 0),  # no judge served here: every GPU trains the policy
        (8, 8, True, 8, None, 0),  # the run names every GPU for the policy: the judge shares its first
        (8, 4, True, 4, 4, 3),  # a named count: the set's first GPUs, the judge on the next
        (8, 2, False, 2, None, 6),
    ],
)
def test_the_policy_and_the_judge_are_placed(available, requested, served, policy, judge_gpu, idle):
    where = placement(available, requested, served, "found")
    assert (where.policy, where.judge_gpu, where.idle) == (policy, judge_gpu, idle)
    assert where.judge_beside_policy == (served and judge_gpu is None)


def test_more_gpus_than_the_host_has_are_refused_with_the_count_found():
    found = gpu_set(host(*[H100] * 4)).describe()
    with pytest.raises(UserInputError) as raised:
        placement(4, 8, True, found)
    assert raised.value.field == "trainer.n_gpus_per_node"
    assert raised.value.message.startswith(
        "8 GPUs asked for; this host has 4: 4 x NVIDIA H100 80GB HBM3 (79.2 GiB each; GPU 0, 1, 2, 3). Name 4 or fewer"
    )


def test_a_child_process_names_its_gpu_by_uuid_else_by_index():
    gpu = host(H100)[0]
    assert device_id(gpu) == "GPU-00000000-aaaa"
    assert device_id(GpuFacts(3, H100[0], "9.0", 79.2, None, None, None)) == "3"
