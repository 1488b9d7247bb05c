"""What ends a run, named once for the trainer, the agent loops and the launcher's reports (launcher/failures/run_errors.py,
launcher/failures/out_of_memory.py, launcher/judge/served_judge.py)."""

from __future__ import annotations

OUT_OF_MEMORY_EXIT = 4  # `medplay train`'s exit status when GPU memory or host RAM ran out
JUDGE_FAILED_EXIT = 5  # `medplay train`'s exit status when the served judge fails (for memory: OUT_OF_MEMORY_EXIT)
RESOURCE_FLOOR_EXIT = 6  # `medplay train`'s exit status when host memory or disk fell to its floor (saved, stopped)
REPEATED_FAILURE_EXIT = 7  # `medplay train`'s exit status when the watchdog's restarts did not move the run forward
USAGE_EXIT = 2  # a mistake in the settings or the inputs (UserInputError)
# What the watchdog never restarts: done, a usage error, out of memory, a resource floor, a stop asked by SIGINT/SIGTERM.
FINAL_EXITS = frozenset({0, USAGE_EXIT, OUT_OF_MEMORY_EXIT, RESOURCE_FLOOR_EXIT, 130, 143})
NO_TRAJECTORIES = "no materializable trajectories"  # verl's words when a step's every game failed
JUDGE_START_UP = "judge start-up"  # the served judge's phase until it first answers


class JudgeServerError(RuntimeError):
    """The judge's vLLM server failed in `phase`: it exited, logged a fatal line, or did not answer."""

    def __init__(self, message: str, *, phase: str = JUDGE_START_UP) -> None:
        super().__init__(message)
        self.phase = phase
        self.exit_status = JUDGE_FAILED_EXIT


class AllTiesError(RuntimeError):
    """Every game of a step was a dropped tie: verl has no sample to train on and stops the run."""


def all_ties_message(step: int, games: int, parse_errors: int) -> str:
    """What to tell the user when a step's games were all ties."""
    return (
        f"step {step}: all {games} games were ties the judge could not decide ({parse_errors} unparseable judge "
        "answers) and medplay.rewards.remove_ties dropped their samples, so there was nothing to train on; "
        "use a judge that answers in its format, more games per step (data.train_batch_size), or "
        "medplay.rewards.remove_ties=false"
    )


class MetricsWriteError(RuntimeError):
    """A step's metrics record could not be written whole to the metrics file: the step is not committed."""


class ActorProcessDiedError(RuntimeError):
    """A Ray actor of the run died with its process or node (launcher/failures/dead_actors.py): the run ends naming it."""


class ResourceFloorError(RuntimeError):
    """Host memory or the checkpoint volume fell to its floor: the trainer saved a checkpoint and ended the run."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.exit_status = RESOURCE_FLOOR_EXIT
