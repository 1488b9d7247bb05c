"""The plugin every verl process imports stays light; the trainer and estimator register where the task runner runs."""

from __future__ import annotations

import os
import subprocess
import sys

import cloudpickle

from medical_team.plugin.rollout_env import ROLLOUT_ENV_PREFIX
from medical_team.task_runner.actor import SelfPlayTaskRunner

# Imported by the plugin, each of these would cost every verl process seconds (the vLLM server and its worker,
# the FSDP workers) for pieces only the task runner or the agent-loop workers use.
HEAVY_MODULES = ("verl", "torch", "vllm", "medical_team.task_runner.trainer", "medical_team.agent_loop.agent_loop")
IMPORTED_BY_PLUGIN = f"""
import sys
import medical_team.plugin.every_process
print(" ".join(name for name in {HEAVY_MODULES!r} if name in sys.modules))
"""


def test_the_plugin_imports_neither_verl_nor_medplays_pieces() -> None:
    # Without the rollout's own variables (a run in this process may have set them): with them the plugin needs verl.
    env = {name: value for name, value in os.environ.items() if not name.startswith(ROLLOUT_ENV_PREFIX)}
    result = subprocess.run(
        [sys.executable, "-c", IMPORTED_BY_PLUGIN], capture_output=True, text=True, check=True, env=env
    )
    assert result.stdout.split() == []


def test_the_task_runner_registers_the_trainer_and_estimator_in_a_process_that_only_received_its_class() -> None:
    # Ray sends the actor's class by value (cloudpickle): the process that builds it has imported neither verl nor
    # medplay's pieces; its run imports and registers them (verl's own run, not this test's, is left out).
    sent = cloudpickle.dumps(SelfPlayTaskRunner.__ray_actor_class__)
    registered = (
        "import pickle, sys\n"
        "runner = pickle.loads(sys.stdin.buffer.read())()\n"
        "assert not {'verl', 'torch', 'medical_team.task_runner.trainer'} & set(sys.modules)\n"
        "from verl.trainer.main_ppo import TaskRunnerV1\n"
        "TaskRunnerV1.__ray_actor_class__.run = lambda self, config: None\n"
        "runner.run(None)\n"
        "from verl.trainer.ppo import core_algos\n"
        "from verl.trainer.ppo.v1 import get_trainer_cls\n"
        "print(get_trainer_cls('medplay_sync').__name__, "
        "core_algos.get_adv_estimator_fn('reinforce_plus_plus_per_role').__name__)\n"
    )
    result = subprocess.run([sys.executable, "-c", registered], input=sent, capture_output=True, check=True)
    assert result.stdout.decode().split() == ["SelfPlayTrainer", "compute_per_role_reinforce_plus_plus"]
