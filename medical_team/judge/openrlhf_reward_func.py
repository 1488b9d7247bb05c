"""medplay's assessor reward as an OpenRLHF local reward function: pass this file as `--remote_rm_url FILE.py`.

OpenRLHF loads it by path and calls `reward_func(queries, prompts, labels)`; the scores come from the
same code as the judge server's `POST /judge` (`medical_team.judge.openrlhf_rewards`). medplay must be
importable where OpenRLHF runs. `medplay judge reward-file --output PATH` writes a copy of this file.

Settings (environment, read at import): MEDPLAY_REWARD_SCHEME (general_sum), MEDPLAY_LOCALISATION_BONUS (0).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import torch

from medical_team.game.rewards import RewardConfig
from medical_team.judge.openrlhf_rewards import reward_payload, score_queries

REWARDS = RewardConfig(
    scheme=os.environ.get("MEDPLAY_REWARD_SCHEME", "general_sum"),
    localisation_bonus=float(os.environ.get("MEDPLAY_LOCALISATION_BONUS", "0")),
)


def reward_func(queries: Sequence[str], prompts: Sequence[str], labels: Sequence[str], **kwargs: Any) -> dict[str, Any]:
    """Assessor rewards of OpenRLHF samples (query = prompt + response, label = error / no_error / JSON)."""
    payload = reward_payload(score_queries(list(queries), list(prompts) if prompts else None, list(labels), REWARDS))
    return {
        "rewards": torch.tensor(payload["rewards"], dtype=torch.float32),
        "scores": torch.tensor(payload["scores"], dtype=torch.float32),
        "extra_logs": {name: torch.tensor(values) for name, values in payload["extra_logs"].items()},
    }
