"""The heap trim (medical_team/run/heap.py) on glibc's real heap: memory freed below a live block stays in the process
until the trim returns it, a run's plugin makes each call of verl's own `update_actor` end with the trim
(medical_team/plugin/heap_trim.py), and the agent-loop worker trims once the trainer has taken a step's games.

Each case runs in a fresh interpreter: the trim wraps verl's worker class for the life of the process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from medical_team.plugin.rollout_env import ROLLOUT_ENV_PREFIX

# Fills glibc's main heap with FILL_MIB of 4 KiB blocks (below the mmap threshold: they come from the heap), frees all
# but the last, which stays live above them so that free() cannot shrink the heap from its top.
HEAP_FILL = """
import ctypes, json, os, resource

FILL_MIB, BLOCK = 64, 4096
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
PAGE = resource.getpagesize()


def rss_mib():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE / 2**20


def fill_and_free_heap():
    blocks = [0] * (FILL_MIB * 2**20 // BLOCK)
    for index in range(len(blocks)):
        blocks[index] = libc.malloc(BLOCK)
        ctypes.memset(blocks[index], 1, BLOCK)
    filled = rss_mib()
    for block in blocks[:-1]:
        libc.free(block)
    return blocks[-1], filled
"""

TRIM_AFTER_FREE = (
    HEAP_FILL
    + """
from medical_team.run.heap import trim_heap

start = rss_mib()
kept, filled = fill_and_free_heap()
freed = rss_mib()
returned = trim_heap()
print(json.dumps({"start": start, "filled": filled, "freed": freed, "trimmed": rss_mib(), "returned": returned}))
"""
)

UPDATE_THROUGH_THE_PLUGIN = (
    HEAP_FILL
    + """
from types import SimpleNamespace

import medical_team.plugin.every_process
from verl.single_controller.base.decorator import MAGIC_ATTR
from verl.workers.engine_workers import ActorRolloutRefWorker

sizes = {}


def train_mini_batch(data):
    sizes["start"] = rss_mib()
    kept, sizes["filled"] = fill_and_free_heap()
    sizes["freed"] = rss_mib()
    return None


worker = SimpleNamespace(enable_routing_replay=False, actor=SimpleNamespace(train_mini_batch=train_mini_batch))
update = ActorRolloutRefWorker.update_actor
assert update(worker, None) is None
sizes["after_update"] = rss_mib()
sizes["dispatched"] = getattr(update, MAGIC_ATTR) == getattr(update.__wrapped__, MAGIC_ATTR)
print(json.dumps(sizes))
"""
)

# The agent loops allocate on the worker's event-loop thread, from that thread's own glibc arena.
DRAIN_AFTER_GAMES = (
    HEAP_FILL
    + """
import asyncio, threading
from types import SimpleNamespace

from medical_team.agent_loop.worker import GameLedger, _SelfPlayAgentLoopWorker

sizes = {"start": rss_mib()}


def play_games():
    kept, sizes["filled"] = fill_and_free_heap()
    sizes["freed"] = rss_mib()


player = threading.Thread(target=play_games)
player.start()
player.join()
worker = SimpleNamespace(ledger=GameLedger())
records, _ = asyncio.run(_SelfPlayAgentLoopWorker.drain_games(worker))
sizes["records"], sizes["after_drain"] = records, rss_mib()
print(json.dumps(sizes))
"""
)


def run_fresh(program: str) -> dict:
    """Run `program` in a fresh interpreter (no rollout variables: a run in this process may have set them)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(ROLLOUT_ENV_PREFIX)}
    result = subprocess.run(
        [sys.executable, "-c", program], check=False, capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_freed_heap_memory_stays_in_the_process_until_the_trim_returns_it() -> None:
    sizes = run_fresh(TRIM_AFTER_FREE)

    assert sizes["filled"] - sizes["start"] >= 60  # the 64 MiB were written
    assert sizes["filled"] - sizes["freed"] < 4  # freed, yet still the process's: glibc keeps them
    assert sizes["returned"] is True
    assert sizes["freed"] - sizes["trimmed"] >= 60


def test_the_plugin_ends_each_call_of_verls_update_actor_with_the_trim() -> None:
    sizes = run_fresh(UPDATE_THROUGH_THE_PLUGIN)

    assert sizes["dispatched"] is True  # verl's `@register` attributes kept on the wrapped method
    assert sizes["filled"] - sizes["start"] >= 60
    assert sizes["filled"] - sizes["freed"] < 4
    assert sizes["freed"] - sizes["after_update"] >= 60  # returned when verl's method ended


def test_the_agent_loop_worker_trims_once_the_trainer_has_taken_the_steps_games() -> None:
    sizes = run_fresh(DRAIN_AFTER_GAMES)

    assert sizes["records"] == []
    assert sizes["filled"] - sizes["start"] >= 60
    assert sizes["filled"] - sizes["freed"] < 4  # freed on the games' thread, kept in its arena
    assert sizes["freed"] - sizes["after_drain"] >= 60
