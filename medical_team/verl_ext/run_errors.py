"""Errors that stop a training run on purpose, found again inside the Ray errors that carry them to the launcher."""

from __future__ import annotations

from medical_team.judge.gold_probe import JudgeGoldFloorError
from medical_team.judge.outage import JudgeUnavailableError
from medical_team.verl_ext.reliability.guards import NonFiniteTrainingError

# Raised in a Ray actor (agent-loop worker or trainer) to end the run with a message for the user.
RUN_STOPPING_ERRORS: tuple[type[BaseException], ...] = (
    JudgeUnavailableError,
    NonFiniteTrainingError,
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
