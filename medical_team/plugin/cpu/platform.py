"""The `cpu` platform for verl's PlatformRegistry: device `cpu`, gloo collectives, no-op memory and stream calls."""

from __future__ import annotations

import os
from contextlib import contextmanager, nullcontext
from types import ModuleType
from typing import Any

import torch
from verl.plugin.platform import PlatformBase, PlatformRegistry

PLATFORM_NAME = "cpu"


class CpuDeviceModule(ModuleType):
    """Stands in for `torch.cuda` where verl calls `get_torch_device().<fn>()`; there is no accelerator."""

    Stream = torch.cpu.Stream
    Event = torch.cpu.Event

    def __init__(self) -> None:
        super().__init__("medplay_cpu_device")

    @staticmethod
    def is_available() -> bool:
        """False: verl's accelerator-only paths (memory stats, device RNG state) must be skipped."""
        return False

    @staticmethod
    def current_device() -> torch.device:
        """The one device."""
        return torch.device("cpu")

    @staticmethod
    def device_count() -> int:
        """One device."""
        return 1

    @staticmethod
    def set_device(device: Any) -> None:
        """No-op: there is nothing to select."""

    @staticmethod
    def synchronize(device: Any = None) -> None:
        """No-op: CPU work is synchronous."""

    @staticmethod
    def empty_cache() -> None:
        """No-op: no caching allocator."""

    @staticmethod
    def ipc_collect() -> None:
        """No-op: no CUDA IPC handles."""

    @staticmethod
    def current_stream(device: Any = None) -> torch.cpu.Stream:
        """The CPU's default stream object."""
        return torch.cpu.current_stream()

    @staticmethod
    def stream(stream: Any = None) -> Any:
        """A null context: CPU work has no streams."""
        return nullcontext()

    @staticmethod
    def manual_seed(seed: int) -> None:
        """Seed torch's CPU generator."""
        torch.manual_seed(seed)

    @staticmethod
    def manual_seed_all(seed: int) -> None:
        """Seed torch's CPU generator."""
        torch.manual_seed(seed)

    @staticmethod
    def get_rng_state(device: Any = None) -> torch.Tensor:
        """Torch's CPU generator state."""
        return torch.get_rng_state()

    @staticmethod
    def set_rng_state(state: torch.Tensor, device: Any = None) -> None:
        """Restore torch's CPU generator state."""
        torch.set_rng_state(state)

    @staticmethod
    def mem_get_info(device: Any = None) -> tuple[int, int]:
        """(free, total) host memory in bytes."""
        page = os.sysconf("SC_PAGE_SIZE")
        return os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page

    @staticmethod
    def set_per_process_memory_fraction(fraction: float, device: Any = None) -> None:
        """No-op: host memory is not partitioned."""

    @staticmethod
    def get_device_name(device: Any = None) -> str:
        """A readable device name."""
        return "cpu"

    @staticmethod
    def memory_allocated(device: Any = None) -> int:
        """0: no device allocator to report on."""
        return 0

    memory_reserved = max_memory_allocated = max_memory_reserved = memory_allocated

    @staticmethod
    def reset_peak_memory_stats(device: Any = None) -> None:
        """No-op: no device allocator."""

    reset_accumulated_memory_stats = reset_peak_memory_stats


_DEVICE_MODULE = CpuDeviceModule()


@PlatformRegistry.register(platform=PLATFORM_NAME)
class PlatformCPU(PlatformBase):
    """Host CPU as verl's device: gloo for collectives; Ray's `GPU` resource is over-committed by the launcher."""

    @property
    def device_name(self) -> str:
        """Torch device type."""
        return "cpu"

    @property
    def vendor_name(self) -> str:
        """No accelerator vendor."""
        return "cpu"

    @property
    def device_module(self) -> ModuleType:
        """The no-accelerator stand-in for `torch.cuda`."""
        return _DEVICE_MODULE

    def is_available(self) -> bool:
        """The host CPU is always usable."""
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        """Never auto-detected: selected explicitly with VERL_PLATFORM=cpu."""
        return False

    def current_device(self) -> torch.device:
        """`torch.device('cpu')`, so `tensor.to(current_device())` stays on the host."""
        return torch.device("cpu")

    def device_count(self) -> int:
        """One device."""
        return 1

    def set_device(self, device_index: int) -> None:
        """No-op."""

    def synchronize(self, device_index: int | None = None) -> None:
        """No-op."""

    def manual_seed(self, seed: int) -> None:
        """Seed torch's CPU generator."""
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        """Seed torch's CPU generator."""
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        """No-op: no caching allocator."""

    def empty_cache(self) -> None:
        """No-op."""

    def get_device_capability(self, device_index: int = 0) -> tuple[int | None, int | None]:
        """No compute capability."""
        return None, None

    def communication_backend_name(self) -> str:
        """Collectives over gloo."""
        return "gloo"

    def visible_devices_envvar(self) -> str:
        """Ray sets this for its `GPU` resource; harmless on a CPU-only host."""
        return "CUDA_VISIBLE_DEVICES"

    @contextmanager
    def nvtx_range(self, msg: str):
        """No profiler ranges on CPU."""
        yield

    def profiler_start(self) -> None:
        """No-op."""

    def profiler_stop(self) -> None:
        """No-op."""

    def ray_resource_name(self) -> str:
        """Workers still ask Ray for a `GPU`; the launcher registers one fake GPU per node."""
        return "GPU"

    def ray_noset_envvars(self) -> list[str]:
        """Nothing to keep Ray from setting."""
        return []

    def is_ipc_supported(self) -> bool:
        """No CUDA IPC: verl falls back to shared-memory weight transfer."""
        return False

    def cudart(self) -> None:
        """No CUDA runtime."""
