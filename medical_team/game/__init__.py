"""The two-turn game, framework-free: prompts, format and answer parsing, rewards, the game manager.

The single-game API (used by the batch manager and by per-game agent loops) is re-exported here.
"""

from medical_team.game.metrics import game_metrics, metric_names
from medical_team.game.rewards import RewardConfig, RewardScheme
from medical_team.game.settle import (
    GameConfig,
    GameOutcome,
    JudgeStats,
    call_judge,
    intended_label,
    judge_request,
    note_for_assessor,
    settle,
)

__all__ = [
    "GameConfig",
    "GameOutcome",
    "JudgeStats",
    "RewardConfig",
    "RewardScheme",
    "call_judge",
    "game_metrics",
    "intended_label",
    "judge_request",
    "metric_names",
    "note_for_assessor",
    "settle",
]
