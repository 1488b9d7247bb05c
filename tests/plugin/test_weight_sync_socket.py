"""The weight-sync socket named after the run (medical_team/plugin/weight_sync_socket.py), on verl's own classes.

Two `medplay train` runs on one host are each job 01000000 of their own Ray cluster, so verl gave both the same
socket file, and two soaks side by side deadlocked at the same second. A fresh interpreter with a run's environment
builds verl's real `ServerAdapter` (the sender, on a local Ray) and asks verl's real vLLM worker extension for the
address it connects to (the receiver): both carry the run's key, and every run's e2e test checks that the two ends
still meet (a mismatch would hang the first weight sync).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from medical_team.plugin.weight_sync_socket import SOCKET_PREFIX, keyed, run_key

pytestmark = [pytest.mark.slow]

FOLDER = "/runs/one"
BOTH_ENDS = """
import json, os
from types import SimpleNamespace

import medical_team.plugin.cpu
import medical_team.plugin.every_process
import ray
from verl.workers.config import RolloutConfig
from verl.workers.rollout.vllm_rollout.utils import vLLMColocateWorkerExtension
from verl.workers.rollout.vllm_rollout.vllm_rollout import ServerAdapter

ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
sender = ServerAdapter(RolloutConfig(name="vllm", tensor_model_parallel_size=1), None, None)
os.environ["VERL_RAY_JOB_ID"] = ray.get_runtime_context().get_job_id()  # as verl's vLLM server hands it on
receiver = vLLMColocateWorkerExtension._get_zmq_handle(SimpleNamespace(model_runner=None, local_rank=0))
print(json.dumps({"sender": sender.zmq_handle, "receiver": receiver, "job": os.environ["VERL_RAY_JOB_ID"]}))
ray.shutdown()
"""


def test_both_ends_of_verls_weight_sync_carry_the_runs_key() -> None:
    env = {**os.environ, "MEDPLAY_RUN_FOLDER": FOLDER, "RANK": "0", "RAY_LOCAL_WORLD_SIZE": "1"}
    env.pop("RAY_ADDRESS", None)
    result = subprocess.run(
        [sys.executable, "-c", BOTH_ENDS], check=False, capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr[-4000:]
    ends = json.loads(result.stdout.splitlines()[-1])

    assert ends["sender"] == ends["receiver"]
    assert ends["sender"] == f"{SOCKET_PREFIX}{run_key(FOLDER)}-{ends['job']}-replica-0-rank-0.sock"


def test_two_runs_folders_give_two_sockets_and_other_addresses_stay() -> None:
    verls = f"{SOCKET_PREFIX}01000000-replica-0-rank-0.sock"

    assert keyed(verls, run_key("/runs/one")) != keyed(verls, run_key("/runs/two"))
    assert keyed("tcp://127.0.0.1:5555", run_key("/runs/one")) == "tcp://127.0.0.1:5555"
    assert len(keyed(verls, run_key("/runs/one")).removeprefix("ipc://")) < 108  # a Unix socket path's limit
