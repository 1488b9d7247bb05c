"""`medplay.emulate_gpu_gib` in each Ray worker: a GPU worker's torch allocator capped to the smaller card's memory.

The workers' half; the launcher's half (medical_team/launcher/plan/card_emulation.py) scales vLLM's memory shares and
hands every Ray worker the cap's fraction in `MEDPLAY_GPU_MEMORY_FRACTION`. Run when verl imports medplay's plugin
(every_process.py), `cap_this_worker` caps torch's caching allocator in a Ray actor that holds a GPU (the trainer's
FSDP workers) with `torch.cuda.set_per_process_memory_fraction`, so an allocation past the smaller card's size
fails with torch's own out-of-memory error, as it would there.
"""

from __future__ import annotations

import os

from medical_team.run.emulated_card import FRACTION_ENV


def cap_this_worker() -> float | None:
    """In a Ray actor that holds a GPU, cap torch's allocator at $MEDPLAY_GPU_MEMORY_FRACTION; the fraction set."""
    value = os.environ.get(FRACTION_ENV)
    if not value:
        return None
    import ray

    if not ray.is_initialized() or not ray.get_runtime_context().get_accelerator_ids().get("GPU"):
        return None  # the driver, the task runner, agent-loop workers: no GPU of their own
    import torch

    if not torch.cuda.is_available():
        return None
    fraction = float(value)
    torch.cuda.set_per_process_memory_fraction(fraction)
    return fraction
