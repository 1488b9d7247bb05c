"""The rollout's weight-sync socket named after the run, so that two runs on one host cannot take each other's.

After each update the FSDP worker hands the vLLM worker the new weights through a ZeroMQ socket in /tmp that verl
names after the Ray job, its replica and its rank (`ipc:///tmp/rl-colocate-zmq-<job>-replica-<r>-rank-<k>.sock`):
unique among the jobs of one Ray cluster. Each `medplay train` that starts its own cluster is that cluster's first
job, 01000000, so two runs on one host name the same file; the sender deletes the file before it binds, and when
two runs sync at the same moment, each vLLM worker waits for ever on a socket the other run took (two soaks side by
side stopped at the same second at step 127, both vLLM workers waiting in verl's `_init_buffer`).

Both ends are renamed with the run's key: a hash of its output folder (`MEDPLAY_RUN_FOLDER` in the run's
environment), of which one run at a time holds the lock (medical_team/run_folder/run_lock.py). The sender is verl's
`ServerAdapter` in the FSDP worker, the receiver its `vLLMColocateWorkerExtension` in the vLLM worker process;
wrapt's post-import hooks wrap each when its module is imported, in whichever process that is.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from types import ModuleType

from wrapt import register_post_import_hook

from medical_team.run.run_key import this_run_folder

SOCKET_PREFIX = "ipc:///tmp/rl-colocate-zmq-"
SENDER_MODULE = "verl.workers.rollout.vllm_rollout.vllm_rollout"
RECEIVER_MODULE = "verl.workers.rollout.vllm_rollout.utils"
_KEYED = "_medplay_keyed"


def run_key(folder: str) -> str:
    """The run's key on its host: the first 12 hex digits of its output folder's SHA-1."""
    return hashlib.sha1(folder.encode()).hexdigest()[:12]


def keyed(handle: str, key: str) -> str:
    """verl's weight-sync socket address with the run's key after its fixed prefix (any other address unchanged)."""
    if not handle.startswith(SOCKET_PREFIX):
        return handle
    return f"{SOCKET_PREFIX}{key}-{handle.removeprefix(SOCKET_PREFIX)}"


def _wrap_once(owner: type, name: str, wrapper: Callable[[Callable], Callable]) -> None:
    """Replace `owner.name` by `wrapper(it)` (its name and docstring kept), once in a process."""
    original = getattr(owner, name)
    if getattr(original, _KEYED, False):
        return
    wrapped = functools.wraps(original)(wrapper(original))
    setattr(wrapped, _KEYED, True)
    setattr(owner, name, wrapped)


def _key_sender(module: ModuleType, key: str) -> None:
    """`ServerAdapter` keeps the socket address it sends on from its construction: rename it then."""

    def keyed_after(init: Callable) -> Callable:
        def init_then_key(self, *args, **kwargs) -> None:
            init(self, *args, **kwargs)
            self.zmq_handle = keyed(self.zmq_handle, key)

        return init_then_key

    _wrap_once(module.ServerAdapter, "__init__", keyed_after)


def _key_receiver(module: ModuleType, key: str) -> None:
    """The vLLM worker's extension computes the address it connects to on each sync: rename what it returns."""
    _wrap_once(
        module.vLLMColocateWorkerExtension, "_get_zmq_handle", lambda handle: lambda self: keyed(handle(self), key)
    )


def key_weight_sync_sockets() -> str | None:
    """In this process, rename both ends of the weight-sync socket with the run's key once verl imports them."""
    folder = this_run_folder()
    if folder is None:
        return None  # not a run's process (a test importing verl, `medplay eval`): verl's own names
    key = run_key(str(folder))
    register_post_import_hook(lambda module: _key_sender(module, key), SENDER_MODULE)
    register_post_import_hook(lambda module: _key_receiver(module, key), RECEIVER_MODULE)
    return key
