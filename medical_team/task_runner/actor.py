"""The task runner's Ray actor as the launcher starts it: verl is imported in the actor's process, never in the
launcher's.

`import verl` costs a process 4-5 CPU seconds (torch, `torch._dynamo` through tensordict, transformers); the launcher,
which only starts this actor and waits on it, does without (launcher/ppo_run.py). The class keeps the name of verl's
task runners (`...TaskRunner`): the run's process titles, the actor's log prefix and the dead-actor line name it so.
"""

from __future__ import annotations

from typing import Any

import ray


@ray.remote
class SelfPlayTaskRunner:
    """verl's V1 task runner with medplay's trainer and estimator (task_runner.py), run in this actor's process."""

    def checked_config(self, config: Any) -> Any:
        """`config` as verl's `main_ppo.main` hands it to `run_ppo`: its device set for this host, then validated."""
        from medical_team.task_runner.task_runner import checked_config

        return checked_config(config)

    def run(self, config: Any) -> None:
        """verl's V1 run of `config`, once this process knows medplay's trainer and estimator by name."""
        from medical_team.task_runner.task_runner import VerlTaskRunner

        VerlTaskRunner().run(config)
