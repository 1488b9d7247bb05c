"""The two-turn game, framework-free: prompts, format and answer parsing, rewards, the game driver.

Every game is played by `play_game` (driver.py); `play_batch` (batch.py) plays many at once over a
batched generator and judge. The single-game steps the driver calls are re-exported too.
"""

from medical_team.game.answers import AssessorAnswer, parse_assessor_answer
from medical_team.game.batch import GameBatch, Generator, play_batch
from medical_team.game.cot import FormatRule, ParsedResponse, parse_response
from medical_team.game.driver import PlayedGame, Reply, Turn, play_game
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
    "FormatRule",
    "GameBatch",
    "GameConfig",
    "GameOutcome",
    "Generator",
    "JudgeStats",
    "ParsedResponse",
    "PlayedGame",
    "Reply",
    "RewardConfig",
    "RewardScheme",
    "Turn",
    "call_judge",
    "game_metrics",
    "intended_label",
    "judge_request",
    "metric_names",
    "note_for_assessor",
    "parse_assessor_answer",
    "parse_response",
    "play_batch",
    "play_game",
    "settle",
]
