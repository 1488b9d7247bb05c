"""After each update of the actor, the FSDP worker hands back to the system the freed memory glibc's heap keeps.

An update's largest batch (a run's new longest prompt) raises glibc's main heap; the memory is freed when the update
ends, but glibc keeps freed pages that lie below live ones, so the worker's RSS steps up and stays there: +5 MiB per
100 steps over a 1,000-step soak, every rise in `[heap]` (docs/reliability.md, "Long runs"). `malloc_trim(0)` returns
those pages (22.9 MiB at once in a live worker). Raising glibc's mmap threshold instead made the update 1.7x slower.

The trim is wired when verl's worker module is imported (wrapt's post-import hook), so the processes that never import
it (the vLLM server's engine, the judge) pay nothing. The trim itself is medical_team/run/heap.py's.
"""

from __future__ import annotations

from wrapt import register_post_import_hook

from medical_team.plugin.phase_calls import after_each_call
from medical_team.run.heap import HAS_MALLOC_TRIM, trim_heap

WORKER_MODULE = "verl.workers.engine_workers"
TRIMMED_PHASE = "update_actor"


def trim_after_each_update() -> None:
    """From the import of verl's worker module on, end each `update_actor` call in this process with `trim_heap()`."""
    if not HAS_MALLOC_TRIM:
        return

    register_post_import_hook(lambda module: after_each_call(TRIMMED_PHASE, lambda call: trim_heap()), WORKER_MODULE)
