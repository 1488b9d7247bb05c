"""One step's settled games as the agent-loop workers hand them to the trainer (no verl import: the trainer reads it).

A worker's ledger record is a `GameOutcome.to_record()` with two more keys, which
`GameOutcome.from_record` ignores: the game's trace for the collapse monitors and the
TransferQueue keys of its trained rows (for the `difficulty_band` term).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from medical_team.game import GameOutcome
from medical_team.game.monitors import GameTrace

TRACE_KEY = "trace"
ROW_KEYS_KEY = "row_keys"  # role -> the TransferQueue key of that role's output


@dataclass(frozen=True)
class StepGame:
    """One settled game of the step: its outcome, what the monitors read, and its rows' TransferQueue keys."""

    outcome: GameOutcome
    trace: GameTrace | None
    row_keys: dict[str, str]  # role name -> key; roles whose output does not train have none

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> StepGame:
        """Rebuild from a ledger record."""
        trace = record.get(TRACE_KEY)
        return cls(
            GameOutcome.from_record(record),
            None if trace is None else GameTrace.from_record(trace),
            dict(record.get(ROW_KEYS_KEY) or {}),
        )


def ledger_record(
    outcome_record: dict[str, Any], trace: dict[str, Any] | None, row_keys: dict[str, str] | None
) -> dict[str, Any]:
    """The record a worker's ledger keeps for one game (inverse of `StepGame.from_record`)."""
    return {**outcome_record, TRACE_KEY: trace, ROW_KEYS_KEY: row_keys or {}}
