"""A training run's processes, each named by the part it plays, and what each holds: RSS, open files, threads, CPU time.

RSS counts a library's pages the kernel may drop and take back under memory pressure; its private part (`anon_mib`,
RSS less file-backed and shared pages) is what grows when a process keeps memory.

One run is the `medplay train` launcher and every process under it: Ray's daemons (the GCS, the raylet, the
dashboard and its agent, the log monitor, the autoscaler's monitor), the Ray actors verl starts (its task runner,
the FSDP workers, the vLLM rollout server with its engine core and worker, the agent-loop workers, the load balancer,
TransferQueue's controller and storage), idle Ray workers, and the served judge. The soak benchmark
(`medplay bench soak`) and the trainer's per-step resource record (docs/reliability.md) read runs through this module.

From inside the run, `run_roots` finds them (docs/reliability.md, "A run sees its own end coming"): the Ray node the
calling Ray worker runs on (walking up from it to its raylet; when `medplay train` started Ray itself its launcher
is the raylet's parent and holds every process of the run, the served judge included; when Ray's head was started
by `ray start --head --block` (the appliance's ray-head.sh), that process holds the head's daemons and workers),
and the process that holds the output folder's run lock (medical_team/run_folder/run_lock.py): `medplay train`, or the
appliance's pipeline (entrypoints/pipeline.sh) with its `medplay train` and served judge. A node joined over
`RAY_ADDRESS` whose `ray start` has exited contributes its raylet and the workers under it; other nodes' processes
are not seen.

A Ray actor's process title is `ray::<Class>[.<method>]` (a named actor: `ray::<name>:<Class>...`), vLLM's
processes call themselves `VLLM::EngineCore` and `VLLM::Worker`; the daemons are known by their program.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

import psutil

from medical_team.run_folder.run_lock import lock_holder

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
# A program at the head of the command line (its first three words) -> its part: Ray's daemons, vLLM's processes,
# the judge (the served judge execs into vLLM's OpenAI server; a worker of Ray still starting is idle).
_PROGRAMS = (
    ("VLLM::EngineCore", "vllm_engine_core"),
    ("VLLM::Worker", "vllm_worker"),
    ("gcs_server", "ray_gcs"),
    ("raylet/raylet", RAYLET),
    ("dashboard/dashboard.py", "ray_dashboard"),
    ("log_monitor.py", "ray_log_monitor"),
    ("autoscaler/_private/monitor.py", "ray_monitor"),
    ("default_worker.py", "ray_idle_worker"),
    ("served_judge_exec", "judge_server"),
    ("vllm.entrypoints.openai.api_server", "judge_server"),
    ("ray start", RAY_HEAD),  # `ray start --head --block` (the appliance's ray-head.sh): the daemons' parent
    ("pipeline.sh", "pipeline"),  # the appliance's pipeline: the parent of its `medplay train`
    ("medplay watchdog", "watchdog"),  # `medplay train`'s watchdog (medical_team/watchdog/): the launcher's parent
    ("judge serve", "judge_server"),
    ("resource_tracker", "python_resource_tracker"),
)
# vLLM's engine core and worker belong to the judge when the judge's server started them.
_JUDGE = "judge_server"
LAUNCHER = "launcher"
OTHER = "other"  # a process of the run this module has no name for (a helper process a library started)


def process_kind(cmdline: Sequence[str]) -> str:
    """The part a process plays in a run, from its command line (or Ray's/vLLM's process title)."""
    first = cmdline[0] if cmdline else ""
    if first.startswith("ray::"):
        actor = first.removeprefix("ray::").split(".")[0].split(":")[-1]
        return next((kind for key, kind in _RAY_ACTORS if key in actor), f"ray_actor:{actor}")
    head = " ".join(cmdline[:3])
    for key, kind in _PROGRAMS:
        if key in head:
            return kind
    if any(part.endswith("medplay") for part in cmdline[:2]) and "train" in cmdline[1:4]:
        return LAUNCHER
    return OTHER


@dataclasses.dataclass(frozen=True)
class ProcessSample:
    """One process of a run at one moment."""

    pid: int
    kind: str
    rss_mib: float
    anon_mib: float  # the private memory in RSS (RSS less file-backed and shared pages): what a leak grows
    open_files: int  # file descriptors (files, sockets, pipes)
    threads: int
    cpu_s: float  # CPU time used since the process started (user and system): its work; time it waited counts nothing


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
    samples, parents = [], {}
    for process in run_processes(roots):
        try:
            with process.oneshot():
                if process.status() == psutil.STATUS_ZOMBIE:
                    continue
                parents[process.pid] = process.ppid()
                memory, cpu = process.memory_info(), process.cpu_times()
                samples.append(
                    ProcessSample(
                        pid=process.pid,
                        kind=process_kind(process.cmdline()),
                        rss_mib=memory.rss / MIB,
                        anon_mib=(memory.rss - memory.shared) / MIB,
                        open_files=process.num_fds(),
                        threads=process.num_threads(),
                        cpu_s=cpu.user + cpu.system,
                    )
                )
        except psutil.Error:
            continue
    return _judge_owns_its_engine(samples, parents)


def _judge_owns_its_engine(samples: list[ProcessSample], parents: dict[int, int]) -> list[ProcessSample]:
    """The served judge's vLLM engine core and worker named as the judge's (`judge_server:vllm_engine_core`)."""
    kinds = {sample.pid: sample.kind for sample in samples}

    def under_judge(pid: int) -> bool:
        while (pid := parents.get(pid, 0)) in kinds:
            if kinds[pid] == _JUDGE:
                return True
        return False

    return [
        dataclasses.replace(sample, kind=f"{_JUDGE}:{sample.kind}")
        if sample.kind.startswith("vllm_") and under_judge(sample.pid)
        else sample
        for sample in samples
    ]


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
