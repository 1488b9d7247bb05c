"""verl's V1 task runner, which registers medplay's trainer and advantage estimator in its own process first, and
verl's checks of the config before it (both run in the task runner's Ray actor, actor.py).

`checked_config` is what verl's `main_ppo.main` does to a composed config before `run_ppo`: the device set for the
host's platform (`auto_set_device`) and the config validated (`validate_config`). It runs here rather than in the
launcher, which imports no verl; the `cpu` platform that `auto_set_device` looks up on the CPU runtime is registered
here by verl's own import of `VERL_USE_EXTERNAL_MODULES` (medical_team/plugin/cpu/).

verl picks the trainer (`trainer.v1.trainer_mode: medplay_sync`) and the estimator
(`algorithm.adv_estimator: reinforce_plus_plus_per_role`) by registered name inside the task runner's Ray actor,
so that process alone imports them, instead of every verl process through the plugin (4–6 s of imports each on
2 CPU cores: docs/benchmarks.md). The agent loops register where they run, in the agent-loop workers, imported with
their worker class (medical_team/agent_loop/worker.py).

verl's `run` prints the whole config into the run's log with `pprint`, a global of its function; here that global
is a print that redacts the values of secret-named settings first (`medical_team/run/redaction.py`). The function's
own globals (verl's `main_ppo` module in this process), read when `run` calls it.

The FSDP workers' group that verl's `PPOTrainer._setup` builds (`RayWorkerGroup`, a global of verl's `trainer_base`
module) is given a rendezvous port this attempt has claimed on the host (rendezvous_port.py), so that no other process
takes it between verl's pick and the FSDP workers' listen.
"""

from __future__ import annotations

from pprint import pprint
from typing import Any

from verl.trainer.main_ppo import TaskRunnerV1
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.trainer.ppo.v1 import trainer_base
from verl.utils.config import validate_config
from verl.utils.device import auto_set_device

from medical_team.run.redaction import redacted
from medical_team.task_runner.rendezvous_port import claim_rendezvous_port, worker_group_class


def print_redacted(value: Any, *args: Any, **kwargs: Any) -> None:
    """`pprint` of a plain config tree with its secret-named values redacted."""
    pprint(redacted(value), *args, **kwargs)


def checked_config(config: Any) -> Any:
    """verl's `main_ppo.main` before `run_ppo`: `config` with its device set for this host's platform, validated."""
    auto_set_device(config)
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    return config


class VerlTaskRunner(TaskRunnerV1.__ray_actor_class__):  # type: ignore[name-defined,misc]
    """verl's V1 task runner; `run` registers the trainer and estimator in this process, then runs verl's."""

    @staticmethod
    def register_medplay_pieces() -> None:
        """Import, and so register with verl, the self-play trainer and the per-role estimator in this process."""
        from medical_team.task_runner import advantage, trainer  # noqa: F401

    def run(self, config: Any) -> None:
        """verl's `run`, once this process knows medplay's trainer and estimator by name."""
        self.register_medplay_pieces()
        verl_run = super().run
        verl_run.__func__.__globals__["pprint"] = print_redacted
        claimed = claim_rendezvous_port()  # its lock is held until this attempt's run returns or its process dies
        if claimed is not None:
            trainer_base.RayWorkerGroup = worker_group_class(claimed.ports)
        try:
            verl_run(config)
        finally:
            if claimed is not None:
                claimed.release()
