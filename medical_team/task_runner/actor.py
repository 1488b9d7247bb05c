"""The task runner's Ray actor as the launcher starts it: verl is imported in the actor's process only.

`import verl` costs 5-7 CPU seconds (tensordict, torch._dynamo) in every process that does it; the launcher, which
only starts this actor and waits on it, never does (docs/benchmarks.md, "Where a CPU run's start goes"). The class
keeps verl's name for it (`...TaskRunner`): the run's process titles and the dead-actor line name it so.
"""

from __future__ import annotations

from typing import Any

import ray


@ray.remote
class SelfPlayTaskRunner:
    """Runs verl's V1 task runner with medplay's pieces (task_runner.run_task_runner) in this actor's process."""

    def run(self, config: Any) -> None:
        """verl's checks of `config`, then its V1 run."""
        from medical_team.task_runner.task_runner import run_task_runner

        run_task_runner(config)
