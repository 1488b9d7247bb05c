"""Errors that stop a training run on purpose, found again inside the Ray errors that carry them to the launcher."""

from __future__ import annotations

from medical_team.judge.gold_probe import JudgeGoldFloorError
from medical_team.judge.outage import JudgeUnavailableError
from medical_team.verl_ext.reliability.guards import NonFiniteTrainingError
from medical_team.verl_ext.served_judge import JudgeServerError

# verl's sync replay buffer when every game of a step left no sample (replay_buffer.py, `sample`).
NO_TRAJECTORIES = "no materializable trajectories"


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


# Raised in a Ray actor (agent-loop worker or trainer) or the launcher to end the run with a message for the user.
RUN_STOPPING_ERRORS: tuple[type[BaseException], ...] = (
    JudgeUnavailableError,
    NonFiniteTrainingError,
    AllTiesError,
    JudgeServerError,
    JudgeGoldFloorError,
)


def run_stopping_cause(error: BaseException) -> BaseException | None:
    """The run-stopping error behind `error` (through Ray's task errors and exception chains), if any."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [error]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, RUN_STOPPING_ERRORS):
            return current
        # Ray's RayTaskError keeps the remote exception in `.cause`; Python chains keep theirs in __cause__/__context__.
        pending += [getattr(current, "cause", None), current.__cause__, current.__context__]
    return None


def one_line(error: BaseException) -> str:
    """The error's own message, without Ray's remote traceback."""
    cause = getattr(error, "cause", None)
    text = str(cause if isinstance(cause, BaseException) else error)
    return text.strip().splitlines()[-1] if text.strip() else type(error).__name__
