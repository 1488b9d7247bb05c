"""A run's processes named by their part, with their RSS, open files and threads (medical_team/run/processes.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from medical_team.run.processes import (
    LAUNCHER,
    OTHER,
    RAYLET,
    process_kind,
    ray_node_root,
    rss_by_kind,
    run_roots,
    sample_processes,
)
from medical_team.run_folder.run_lock import hold_run_lock, release_run_lock


@pytest.mark.parametrize(
    ("cmdline", "kind"),
    [
        (["ray::SelfPlayTaskRunner.run"], "task_runner"),
        (["ray::WorkerDict.actor_rollout_ref_compute_ref_log_prob"], "fsdp_worker"),
        (["ray::vllm_server_0_0:vLLMHttpServer.__init__"], "vllm_server"),
        (["ray::vLLMHttpServer"], "vllm_server"),
        (["ray::_SelfPlayAgentLoopWorker"], "agent_loop_worker"),
        (["ray::GlobalRequestLoadBalancer"], "load_balancer"),
        (["ray::TransferQueueController"], "transfer_queue"),
        (["ray::SimpleStorageUnit"], "transfer_queue_storage"),
        (["ray::IDLE"], "ray_idle_worker"),
        (["ray::DashboardAgent"], "ray_dashboard_agent"),
        (["ray::SomethingNew.method"], "ray_actor:SomethingNew"),
        (["VLLM::EngineCore"], "vllm_engine_core"),
        (["VLLM::Worker"], "vllm_worker"),
        (["/venv/lib/python3.11/site-packages/ray/core/src/ray/gcs/gcs_server", "--log_dir=/tmp"], "ray_gcs"),
        (["/venv/lib/python3.11/site-packages/ray/core/src/ray/raylet/raylet", "--x"], "ray_raylet"),
        (["/venv/bin/python", "-u", "/venv/lib/ray/_private/log_monitor.py"], "ray_log_monitor"),
        (["/venv/bin/python", "/venv/lib/ray/dashboard/dashboard.py", "--host=127.0.0.1"], "ray_dashboard"),
        (["/venv/bin/python", "-u", "/venv/lib/ray/autoscaler/_private/monitor.py"], "ray_monitor"),
        (["/venv/bin/python", ".venv/bin/medplay", "train", "profile=cpu-smoke"], LAUNCHER),
        (["/venv/bin/medplay", "judge", "serve", "--backend", "rules"], "judge_server"),
        (["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"], "judge_server"),
        (
            ["/venv/bin/python", "-u", "/venv/lib/ray/_private/workers/default_worker.py", "--raylet-name=x"],
            "ray_idle_worker",
        ),
        (["/venv/bin/python", "-c", "pass", "--raylet_socket_name=/tmp/ray/raylet"], OTHER),
        (
            ["/venv/bin/python", "-c", "from multiprocessing.resource_tracker import main;main(7)"],
            "python_resource_tracker",
        ),
        (["/usr/bin/python3", "/venv/bin/ray", "start", "--head", "--block", "--port=6379"], "ray_head"),
        (["/bin/bash", "/opt/medplay/entrypoints/pipeline.sh", "train"], "pipeline"),
        (["medplay watchdog /checkpoints"], "watchdog"),  # the title `medplay train` takes as the run's watchdog
        (["/bin/sleep", "5"], OTHER),
        ([], OTHER),
    ],
)
def test_each_part_of_a_run_is_named_by_its_title(cmdline: list[str], kind: str) -> None:
    assert process_kind(cmdline) == kind


def test_a_real_process_tree_is_sampled_with_each_process_once() -> None:
    # a parent holding two children, one of which holds a grandchild: the whole tree under the root, and only it
    script = (
        "import subprocess, sys, time\n"
        "kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']) for _ in range(2)]\n"
        "sum(range(30_000_000))\n"  # CPU time the root's sample must show
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    root = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    outsider = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert root.stdout is not None and root.stdout.readline().strip() == "ready"
        samples = sample_processes([root.pid, root.pid])
        assert len(samples) == 3 and len({sample.pid for sample in samples}) == 3
        assert root.pid in {sample.pid for sample in samples} and outsider.pid not in {s.pid for s in samples}
        for sample in samples:
            assert sample.kind == OTHER and sample.rss_mib > 1 and sample.threads >= 1 and sample.open_files >= 3
            assert 0 < sample.anon_mib < sample.rss_mib
        assert next(sample.cpu_s for sample in samples if sample.pid == root.pid) >= 0.1
        assert list(rss_by_kind(samples)) == [OTHER]
        assert rss_by_kind(samples)[OTHER] == pytest.approx(sum(sample.rss_mib for sample in samples))
    finally:
        for process in psutil.Process(root.pid).children(recursive=True):
            process.kill()
        for process in (root, outsider):
            process.kill()
            process.wait()


def test_a_root_that_is_gone_gives_no_samples() -> None:
    beyond_any_pid = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    assert sample_processes([beyond_any_pid]) == []


def test_the_served_judges_engine_is_named_as_the_judges() -> None:
    # a judge server (its command names vLLM's OpenAI server) whose child calls itself VLLM::EngineCore, as vLLM's
    # engine core does, beside an engine core that no judge started (the rollout's)
    engine = "import setproctitle, time; setproctitle.setproctitle('VLLM::EngineCore'); time.sleep(60)"
    judge = (
        "# vllm.entrypoints.openai.api_server\n"
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', sys.argv[1]])\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    root = subprocess.Popen([sys.executable, "-c", judge, engine], stdout=subprocess.PIPE, text=True)
    rollout_engine = subprocess.Popen([sys.executable, "-c", engine])
    try:
        assert root.stdout is not None and root.stdout.readline().strip() == "ready"
        kinds: dict[int, str] = {}
        deadline = time.monotonic() + 60  # a hang guard: both children retitle themselves at once
        while sorted(kinds.values()) != ["judge_server", "judge_server:vllm_engine_core", "vllm_engine_core"]:
            assert time.monotonic() < deadline, kinds
            kinds = {sample.pid: sample.kind for sample in sample_processes([root.pid, rollout_engine.pid])}
        assert kinds[rollout_engine.pid] == "vllm_engine_core" and kinds[root.pid] == "judge_server"
    finally:
        for process in [*psutil.Process(root.pid).children(recursive=True), root, rollout_engine]:
            process.kill()
        root.wait()
        rollout_engine.wait()


# Each level of a process chain: its title (argv[0], from the environment so that no parent's command line holds a
# child's title) and the script it runs. The launcher's `train` is its script's $0, as in `medplay train`.
_LEVEL = '(exec -a "$T{n}" bash -c "$S{n}" train) & wait'
_LEAF = '(exec -a "$T{n}" sleep 60) & wait'


@contextmanager
def titled_chain(*titles: str) -> Iterator[list[int]]:
    """Processes titled `titles`, each the parent of the next (as Ray's and vLLM's processes retitle themselves)."""
    last = len(titles) - 1
    env = {**os.environ, **{f"T{n}": title for n, title in enumerate(titles)}}
    env.update({f"S{n}": (_LEAF if n + 1 == last else _LEVEL).format(n=n + 1) for n in range(last)})
    top = subprocess.Popen(["bash", "-c", 'exec -a "$T0" bash -c "$S0" train'], env=env)
    try:
        chain = [psutil.Process(top.pid)]
        while len(chain) < len(titles):  # each level appears once its parent has forked it
            children = chain[-1].children()
            if children and children[0].cmdline()[:1] == [titles[len(chain)]]:
                chain.append(children[0])
            elif top.poll() is not None:
                raise AssertionError(f"the chain ended at {len(chain)} of {len(titles)} levels")
            else:
                time.sleep(0.01)
        yield [process.pid for process in chain]
    finally:
        for process in psutil.Process(top.pid).children(recursive=True):
            process.kill()
        top.kill()
        top.wait()


RAYLET_TITLE = "/venv/lib/python3.11/site-packages/ray/core/src/ray/raylet/raylet"
WORKER_TITLE = "ray::SelfPlayTaskRunner.run"


@pytest.mark.parametrize(
    ("holder_title", "root_level"),
    [
        ("/venv/bin/medplay", 0),  # `medplay train` started Ray: its launcher holds the run
        ("/venv/bin/ray start --head --block", 0),  # the appliance's Ray head (ray-head.sh)
        ("/bin/bash", 1),  # a raylet whose parent is no head (its `ray start` exited): the raylet
    ],
)
def test_a_ray_worker_finds_the_process_holding_its_node(holder_title: str, root_level: int) -> None:
    with titled_chain(holder_title, RAYLET_TITLE, WORKER_TITLE) as pids:
        assert [process_kind(psutil.Process(pid).cmdline()) for pid in pids[1:]] == [RAYLET, "task_runner"]
        assert ray_node_root(pids[2]) == pids[root_level]


def test_a_process_under_no_raylet_has_no_ray_node() -> None:
    assert ray_node_root(os.getpid()) is None


def test_the_runs_roots_are_the_lock_holder_and_the_ray_node(tmp_path: Path) -> None:
    hold_run_lock(tmp_path)  # this process holds the output folder, as `medplay train` does
    try:
        with titled_chain("/venv/bin/ray start --head --block", RAYLET_TITLE, WORKER_TITLE) as pids:
            assert run_roots(pids[2], tmp_path) == [os.getpid(), pids[0]]
            assert run_roots(os.getpid(), tmp_path) == [os.getpid()]
    finally:
        release_run_lock(tmp_path)
    assert run_roots(os.getpid(), tmp_path / "no-run") == []
