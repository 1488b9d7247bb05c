"""A CUDA out-of-memory turned into one message (medical_team/launcher/failures/out_of_memory.py), and the verl names it reads."""

from __future__ import annotations

import importlib.util
import inspect
import json
import re
from pathlib import Path

import pytest
import torch
from ray.exceptions import OutOfMemoryError as RayHostOutOfMemoryError
from ray.exceptions import RayTaskError

from medical_team.launcher.failures.out_of_memory import KNOBS, out_of_memory, phase_of
from medical_team.plugin.oom_injection import inject_in_this_process
from medical_team.run.failures import OUT_OF_MEMORY_EXIT, JudgeServerError
from medical_team.run.oom_injection import INJECT_ENV
from medical_team.run.step_phases import PHASE_METHODS

TORCH_MESSAGE = (
    "CUDA out of memory. Tried to allocate 9.27 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.2 GiB is free."
)


def ray_error(method: str) -> RayTaskError:
    """What the launcher receives when a worker's `method` raised torch's error: Ray's wrapper around it."""
    cause = torch.OutOfMemoryError(TORCH_MESSAGE)
    trace = (
        "Traceback (most recent call last):\n"
        '  File "verl/single_controller/ray/base.py", line 901, in func\n'
        f'  File "verl/workers/engine_workers.py", line 714, in {method}\n'
        f"torch.OutOfMemoryError: {TORCH_MESSAGE}"
    )
    return RayTaskError(f"WorkerDict.actor_rollout_ref_{method}", trace, cause).as_instanceof_cause()


@pytest.mark.parametrize("phase", ["rollout", "old_log_prob", "ref", "update_actor"])
def test_the_phase_comes_from_the_worker_method_that_raised(phase, tmp_path):
    log = tmp_path / "train.log"
    log.write_text(
        "(WorkerDict pid=1) After FSDP, memory allocated (GB): 15.07, memory reserved (GB): 16.91, "
        "device memory used/total (GB): 18.11/79.18\n"
    )
    metrics = tmp_path / "metrics.jsonl"
    record = {"step": 1, "data": {"actor/perf/max_memory_allocated_gb": 75.07, "timing_s/step": 65.5}}
    metrics.write_text(json.dumps(record) + "\n")
    error = ray_error(PHASE_METHODS[phase])
    assert isinstance(error, torch.OutOfMemoryError)  # Ray's wrapper is also the cause's type

    found = out_of_memory(RuntimeError("the trainer failed"), log, metrics, "/run/checkpoints/global_step_1")
    assert found is None  # not an out-of-memory
    try:
        raise RuntimeError("the task runner failed") from error
    except RuntimeError as chained:
        found = out_of_memory(chained, log, metrics, "/run/checkpoints/global_step_1")
    assert found is not None and found.phase == phase
    message = str(found)
    assert message.startswith(f"out of GPU memory in {phase}: CUDA out of memory. Tried to allocate 9.27 GiB")
    assert "After FSDP, memory allocated (GB): 15.07, memory reserved (GB): 16.91" in message
    assert "step 1: actor/perf/max_memory_allocated_gb 75.07" in message
    assert KNOBS[phase] in message and "`medplay probe --plan`" in message
    assert message.endswith("the last checkpoint is intact: /run/checkpoints/global_step_1")


def test_an_out_of_memory_in_the_judges_server_is_read_from_its_log(tmp_path):
    log = tmp_path / "judge-server.log"
    log.write_text(
        f"INFO loading\ntorch.OutOfMemoryError: {TORCH_MESSAGE}\nRuntimeError: Engine core initialization failed\n"
    )
    error = JudgeServerError(
        f"the judge's vLLM server exited with status 1 while starting; its log: {log}: RuntimeError: Engine core ..."
    )
    found = out_of_memory(error, None, None, None)
    assert found is not None and found.phase == "judge_server" and "out of GPU memory in judge start-up:" in str(found)
    assert "medplay.judge.serve.gpu_memory_utilization" in str(found) and "no checkpoint was saved yet" in str(found)
    assert out_of_memory(JudgeServerError("did not answer within 900 s; its log: /nowhere"), None, None, None) is None


def test_rays_memory_monitor_killing_workers_is_out_of_host_memory_not_gpu(tmp_path):
    # Ray's own OutOfMemoryError shares torch's class name; it means the host's RAM ran short.
    killed = RayHostOutOfMemoryError(
        "4 worker(s) were killed due to the node running low on memory.\nMemory on the node was 22.09GB used"
    )
    try:
        raise RuntimeError("the task runner failed") from killed
    except RuntimeError as chained:
        found = out_of_memory(chained, None, None, None)
    message = str(found)
    assert message.startswith("out of host memory: 4 worker(s) were killed due to the node running low on memory;")
    assert "GPU" not in message and "Out of memory (host RAM)" in message
    assert message.endswith("no checkpoint was saved yet")


def test_the_innermost_phase_method_of_the_traceback_wins():
    text = RuntimeError("in update_actor ... then in compute_ref_log_prob")
    assert phase_of(text) == "ref"


def test_the_phase_methods_are_verls_worker_methods_and_the_trainer_calls_them():
    # A verl contact (docs/verl-integration.md): the names the phase is read from.
    from verl.trainer.ppo.v1 import trainer_base
    from verl.workers.engine_workers import ActorRolloutRefWorker

    for phase, method in PHASE_METHODS.items():
        if phase != "rollout":
            assert callable(getattr(ActorRolloutRefWorker, method)), (phase, method)
    # The rollout server's module needs vLLM's version check (the CPU runtime patches it in the workers): read it.
    server = Path(importlib.util.find_spec("verl.workers.rollout.vllm_rollout").submodule_search_locations[0])
    source_text = (server / "vllm_async_server.py").read_text()
    assert re.search(r"class vLLMHttpServer:.*?\n    async def generate\(", source_text, re.DOTALL)
    source = inspect.getsource(trainer_base)
    for method in ("compute_log_prob", "compute_ref_log_prob", "update_actor"):
        assert f"wg.{method}(batch)" in source, method


def test_injection_makes_the_phase_method_raise_torchs_error_at_its_nth_call(monkeypatch):
    from verl.single_controller.base.decorator import MAGIC_ATTR
    from verl.workers.engine_workers import ActorRolloutRefWorker

    original = ActorRolloutRefWorker.update_actor
    monkeypatch.setattr(ActorRolloutRefWorker, "update_actor", original)  # restored after the test
    monkeypatch.setenv(INJECT_ENV, "update_actor@2")
    assert inject_in_this_process() == "update_actor"
    patched = ActorRolloutRefWorker.update_actor
    assert getattr(patched, MAGIC_ATTR) == getattr(original, MAGIC_ATTR)  # verl still dispatches it
    with pytest.raises(Exception):  # noqa: B017 - the first call reaches verl's method (no worker here)
        patched(object(), None)
    with pytest.raises(torch.OutOfMemoryError, match="injected by MEDPLAY_INJECT_OOM"):
        patched(object(), None)
    monkeypatch.setenv(INJECT_ENV, "")
    assert inject_in_this_process() is None


def test_the_exit_status_is_documented():
    text = (Path(__file__).parents[3] / "docs" / "troubleshooting.md").read_text()
    assert f"exit status {OUT_OF_MEMORY_EXIT}" in text and "out of GPU memory in" in text


def test_a_rollout_out_of_memory_is_found_in_the_agent_loops_log_when_verl_ends_without_samples(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(
        "(_SelfPlayAgentLoopWorker pid=8868) ray.exceptions.RayTaskError(OutOfMemoryError): "
        "ray::vLLMHttpServer.generate() (pid=8539, ip=192.0.2.2)\n"
        "(_SelfPlayAgentLoopWorker pid=8868)     raise torch.OutOfMemoryError(...)\n"
        f"(_SelfPlayAgentLoopWorker pid=8868) torch.OutOfMemoryError: {TORCH_MESSAGE}\n"
    )
    error = RuntimeError("step 1: replay buffer sampled 4 groups with no materializable trajectories.")
    found = out_of_memory(error, log, None, None)
    assert found is not None and found.phase == "rollout"
    assert str(found).startswith(f"out of GPU memory in rollout: {TORCH_MESSAGE}")
    assert out_of_memory(RuntimeError("something else"), log, None, None) is None
