"""glibc's `malloc_trim(0)`: the freed pages a process's heaps keep, handed back to the system (no verl, Ray or vLLM).

glibc keeps freed memory that lies below live blocks, in the main heap and in the arena of each thread that
allocated it, so a process whose largest allocations come and go keeps its high-water mark. The FSDP worker trims after
each update (plugin/heap_trim.py), the agent-loop worker after each step's games (agent_loop/worker.py): docs/
reliability.md, "Long runs". Without glibc (`malloc_trim` missing) it does nothing.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable


def _glibc_malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, or None where the C library the interpreter runs on has none."""
    try:
        trim = ctypes.CDLL(None).malloc_trim  # the interpreter's own symbols, the C library's among them
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_MALLOC_TRIM = _glibc_malloc_trim()
HAS_MALLOC_TRIM = _MALLOC_TRIM is not None


def trim_heap() -> bool:
    """Return every heap's free pages to the system (`malloc_trim(0)`); whether any were returned."""
    return _MALLOC_TRIM is not None and _MALLOC_TRIM(0) == 1
