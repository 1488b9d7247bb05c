"""REINFORCE++ with advantages whitened separately per role, registered as a verl advantage estimator.

Select it with `algorithm.adv_estimator=reinforce_plus_plus_per_role`. Returns are verl's own
REINFORCE++ returns (discounted sums of token-level rewards, which include the KL penalty when
`algorithm.use_kl_in_reward=true`); whitening runs once per role because the attacker's and the
assessor's reward distributions differ. verl copies advantages across a trajectory's outputs only
for GRPO (`trainer/ppo/v1/utils.py`), so each row keeps the advantage computed here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from verl.trainer.ppo.core_algos import compute_reinforce_plus_plus_outcome_advantage, register_adv_est

from medical_team.verl_ext.roles import roles_of

PER_ROLE_ESTIMATOR = "reinforce_plus_plus_per_role"


def role_groups(index: np.ndarray | list[str]) -> dict[str, torch.Tensor]:
    """Row indices per role name; rows without a role (padding, other agent loops) form the group `none`."""
    groups: dict[str, list[int]] = {}
    for row, role in enumerate(roles_of(index)):
        groups.setdefault(role.value if role is not None else "none", []).append(row)
    return {name: torch.tensor(rows, dtype=torch.long) for name, rows in groups.items()}


@register_adv_est(PER_ROLE_ESTIMATOR)
def compute_per_role_reinforce_plus_plus(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    config: Any = None,
    index: np.ndarray | None = None,
    **_: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(advantages, returns), both (batch, response_length): verl's REINFORCE++ run on each role's rows.

    A group with fewer than two response tokens cannot be whitened and gets zero advantages
    (verl's padding rows, whose response mask is zero, are such a group).
    """
    if config is None:
        raise ValueError(f"{PER_ROLE_ESTIMATOR} needs the algorithm config (for gamma)")
    if index is None:
        raise ValueError(f"{PER_ROLE_ESTIMATOR} needs the rows' uids (verl passes them as `index`)")
    advantages = torch.zeros_like(token_level_rewards)
    returns = torch.zeros_like(token_level_rewards)
    for rows in role_groups(index).values():
        mask = response_mask[rows]
        if mask.sum() < 2:
            continue
        adv, ret = compute_reinforce_plus_plus_outcome_advantage(token_level_rewards[rows], mask, config=config)
        advantages[rows] = adv
        returns[rows] = ret
    return advantages, returns
