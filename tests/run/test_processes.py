"""A run's processes named by their part, with their RSS, open files and threads (medical_team/run/processes.py)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from medical_team.run.processes import LAUNCHER, OTHER, process_kind, rss_by_kind, sample_processes


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
