"""What ends a run, named once for the launcher's reports (run_errors, out_of_memory, served_judge) and the trainer."""

from __future__ import annotations

OUT_OF_MEMORY_EXIT = 4  # `medplay train`'s exit status when GPU memory or host RAM ran out
JUDGE_FAILED_EXIT = 5  # `medplay train`'s exit status when the served judge fails (for memory: OUT_OF_MEMORY_EXIT)
NO_TRAJECTORIES = "no materializable trajectories"  # verl's words when a step's every game failed
JUDGE_START_UP = "judge start-up"  # the served judge's phase until it first answers


class JudgeServerError(RuntimeError):
    """The judge's vLLM server failed in `phase`: it exited, logged a fatal line, or did not answer."""

    def __init__(self, message: str, *, phase: str = JUDGE_START_UP) -> None:
        super().__init__(message)
        self.phase = phase
        self.exit_status = JUDGE_FAILED_EXIT
