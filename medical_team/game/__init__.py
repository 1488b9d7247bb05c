"""The two-turn game, framework-free: prompts, format and answer parsing, rewards, the game manager.

The single-game API (used by the batch manager and by per-game agent loops) is re-exported here.
"""

from medical_team.game.answers import AssessorAnswer, parse_assessor_answer
from medical_team.game.cot import FormatRule, ParsedResponse, parse_response
from medical_team.game.manager import Experience, GameBatch, Generator, MedicalDialogueGameManager, PlayedGame
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
    "AssessorAnswer",
    "Experience",
    "FormatRule",
    "GameBatch",
    "GameConfig",
    "GameOutcome",
    "Generator",
    "JudgeStats",
    "MedicalDialogueGameManager",
    "ParsedResponse",
    "PlayedGame",
    "RewardConfig",
    "RewardScheme",
    "call_judge",
    "game_metrics",
    "intended_label",
    "judge_request",
    "metric_names",
    "note_for_assessor",
    "parse_assessor_answer",
    "parse_response",
    "settle",
]
