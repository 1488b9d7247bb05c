"""A training run's processes, each named by the part it plays, and what each holds: RSS, open files, threads.

One run is the `medplay train` launcher and every process under it: Ray's daemons (the GCS, the raylet, the
dashboard and its agent, the log monitor, the autoscaler's monitor), the Ray actors verl starts (its task runner,
the FSDP workers, the vLLM rollout server with its engine core and worker, the agent-loop workers, the load balancer,
TransferQueue's controller and storage), idle Ray workers, and the served judge. The soak benchmark
(scripts/soak.py) and the trainer's per-step resource record (docs/reliability.md) read runs through this module.

From inside the run, `run_roots` finds them (docs/reliability.md, "A run sees its own end coming"): the Ray node the
calling Ray worker runs on (walking up from it to its raylet; when `medplay train` started Ray itself its launcher
is the raylet's parent and holds every process of the run, the served judge included; when Ray's head was started
by `ray start --head --block` (the appliance's ray-head.sh), that process holds the head's daemons and workers),
and the process that holds the output folder's run lock (medical_team/run_lock.py): `medplay train`, or the
appliance's pipeline (container/pipeline.sh) with its `medplay train` and served judge. A node joined over
`RAY_ADDRESS` whose `ray start` has exited contributes its raylet and the workers under it; other nodes' processes
are not seen.

A Ray actor's process title is `ray::<Class>[.<method>]` (a named actor: `ray::<name>:<Class>...`), vLLM's
processes call themselves `VLLM::EngineCore` and `VLLM::Worker`; the daemons are known by their program.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from medical_team.run_lock import lock_holder

MIB = 1024 * 1024
RAYLET = "ray_raylet"
RAY_HEAD = "ray_head"

# A Ray actor's class -> its part in the run (the first match of a class name that contains the key).
_RAY_ACTORS = (
    ("SelfPlayTaskRunner", "task_runner"),
    ("TaskRunner", "task_runner"),
    ("WorkerDict", "fsdp_worker"),
    ("vLLMHttpServer", "vllm_server"),
    ("AgentLoopWorker", "agent_loop_worker"),
    ("LoadBalancer", "load_balancer"),
    ("TransferQueueController", "transfer_queue"),
    ("StorageUnit", "transfer_queue_storage"),
    ("RewardLoopWorker", "reward_worker"),
    ("DashboardAgent", "ray_dashboard_agent"),
    ("RuntimeEnvAgent", "ray_runtime_env_agent"),
    ("IDLE", "ray_idle_worker"),
)
# A program in the command line -> its part (Ray's daemons, vLLM's processes, the judge).
_PROGRAMS = (
    ("VLLM::EngineCore", "vllm_engine_core"),
    ("VLLM::Worker", "vllm_worker"),
    ("gcs_server", "ray_gcs"),
    ("raylet", RAYLET),
    ("dashboard/dashboard.py", "ray_dashboard"),
    ("log_monitor.py", "ray_log_monitor"),
    ("autoscaler/_private/monitor.py", "ray_monitor"),
    ("served_judge_exec", "judge_server"),
    ("ray start", RAY_HEAD),  # `ray start --head --block` (the appliance's ray-head.sh): the daemons' parent
    ("pipeline.sh", "pipeline"),  # the appliance's pipeline: the parent of its `medplay train`
    ("judge serve", "judge_server"),
    ("resource_tracker", "python_resource_tracker"),
)
LAUNCHER = "launcher"
OTHER = "other"  # a process of the run this module has no name for (a helper process a library started)


def process_kind(cmdline: Sequence[str]) -> str:
    """The part a process plays in a run, from its command line (or Ray's/vLLM's process title)."""
    title = " ".join(cmdline)
    first = cmdline[0] if cmdline else ""
    if first.startswith("ray::"):
        actor = first.removeprefix("ray::").split(".")[0].split(":")[-1]
        return next((kind for key, kind in _RAY_ACTORS if key in actor), f"ray_actor:{actor}")
    for key, kind in _PROGRAMS:
        if key in title:
            return kind
    if any(part.endswith("medplay") for part in cmdline[:2]) and "train" in cmdline[1:4]:
        return LAUNCHER
    return OTHER


@dataclass(frozen=True)
class ProcessSample:
    """One process of a run at one moment."""

    pid: int
    kind: str
    rss_mib: float
    open_files: int  # file descriptors (files, sockets, pipes)
    threads: int


def run_processes(roots: Iterable[int]) -> list[psutil.Process]:
    """The processes of a run: each root that is alive and everything under it, once each, in pid order."""
    found: dict[int, psutil.Process] = {}
    for pid in roots:
        try:
            root = psutil.Process(pid)
            for process in [root, *root.children(recursive=True)]:
                found.setdefault(process.pid, process)
        except psutil.Error:
            continue
    return [found[pid] for pid in sorted(found)]


def sample_processes(roots: Iterable[int]) -> list[ProcessSample]:
    """Every live process of the run with its part, RSS, open files and threads (processes gone meanwhile left out)."""
    samples = []
    for process in run_processes(roots):
        try:
            with process.oneshot():
                if process.status() == psutil.STATUS_ZOMBIE:
                    continue
                samples.append(
                    ProcessSample(
                        pid=process.pid,
                        kind=process_kind(process.cmdline()),
                        rss_mib=process.memory_info().rss / MIB,
                        open_files=process.num_fds(),
                        threads=process.num_threads(),
                    )
                )
        except psutil.Error:
            continue
    return samples


def rss_by_kind(samples: Iterable[ProcessSample]) -> dict[str, float]:
    """RSS in MiB summed over the processes of each part, largest first."""
    totals: dict[str, float] = defaultdict(float)
    for sample in samples:
        totals[sample.kind] += sample.rss_mib
    return dict(sorted(totals.items(), key=lambda item: -item[1]))


def _kind_of(process: psutil.Process) -> str | None:
    """The part `process` plays, None when it is gone."""
    try:
        return process_kind(process.cmdline())
    except psutil.Error:
        return None


def ray_node_root(pid: int) -> int | None:
    """The process holding the Ray node that Ray worker `pid` runs on: its raylet's parent when that is a `medplay
    train` launcher or a `ray start` head, else the raylet; None when `pid` has no raylet above it."""
    try:
        ancestors = psutil.Process(pid).parents()
    except psutil.Error:
        return None
    for depth, process in enumerate(ancestors):
        if _kind_of(process) != RAYLET:
            continue
        holder = ancestors[depth + 1] if depth + 1 < len(ancestors) else None
        return holder.pid if holder is not None and _kind_of(holder) in (LAUNCHER, RAY_HEAD) else process.pid
    return None


def run_roots(pid: int, output_folder: Path) -> list[int]:
    """The roots of the run that Ray worker `pid` belongs to (see the module's docstring), without repeats."""
    roots = [root for root in (lock_holder(output_folder), ray_node_root(pid)) if root is not None]
    return list(dict.fromkeys(roots))
