"""REINFORCE++ with advantages computed separately per role, registered as a verl advantage estimator.

Select it with `algorithm.adv_estimator=reinforce_plus_plus_per_role`. A row's uid is
`<seed uid>_<role>` (run/roles.py), and verl gives the k games of one seed row
(`actor_rollout_ref.rollout.n = k`) the same seed uid, so rows with equal uids are one seed's group
for one role: roles never share a baseline. Per role:

- rows in groups (k >= 2): verl's own `reinforce_plus_plus_baseline` (the group's mean reward is
  subtracted, then whitened over the role's rows). A group that cannot tell its samples apart (one
  sample left after dropped ties, or k equal rewards, e.g. one constant verdict on a vanilla seed)
  gets zero advantage and stays out of the whitening statistics: it has no comparison to teach.
  The rewards compared must be the game scores alone, so groups refuse `algorithm.use_kl_in_reward`:
  a KL penalty in the rewards makes equal scores unequal sums, and whitening turns that noise into
  advantages of unit size. The KL to the reference goes in the actor's loss instead
  (`actor_rollout_ref.actor.use_kl_loss`, as GRPO does; docs/game.md, "Advantages").
- one sample per game (k = 1): verl's REINFORCE++ returns (discounted sums of token-level rewards,
  which include the KL penalty when `algorithm.use_kl_in_reward=true`), whitened over the role's rows.

verl copies advantages across a trajectory's outputs only for GRPO (`trainer/ppo/v1/utils.py`), so
each row keeps the advantage computed here.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import torch
from verl.trainer.ppo.core_algos import (
    compute_reinforce_plus_plus_baseline_outcome_advantage,
    compute_reinforce_plus_plus_outcome_advantage,
    register_adv_est,
)

from medical_team.run.roles import roles_of

PER_ROLE_ESTIMATOR = "reinforce_plus_plus_per_role"


def role_groups(index: np.ndarray | list[str]) -> dict[str, torch.Tensor]:
    """Row indices per role name; rows without a role (padding, other agent loops) form the group `none`."""
    groups: dict[str, list[int]] = {}
    for row, role in enumerate(roles_of(index)):
        groups.setdefault(role.value if role is not None else "none", []).append(row)
    return {name: torch.tensor(rows, dtype=torch.long) for name, rows in groups.items()}


def informative_rows(scores: torch.Tensor, uids: np.ndarray) -> torch.Tensor:
    """Rows whose seed group holds at least two samples with different rewards (a mask over `scores`)."""
    members: dict[str, list[int]] = defaultdict(list)
    for row, uid in enumerate(uids):
        members[str(uid)].append(row)
    keep = torch.zeros(len(uids), dtype=torch.bool)
    for rows in members.values():
        if len(rows) > 1 and bool(scores[rows].max() > scores[rows].min()):
            keep[rows] = True
    return keep


def _grouped(uids: np.ndarray) -> bool:
    """Whether any seed plays more than one game in these rows (rollout.n > 1)."""
    return len(set(map(str, uids))) < len(uids)


def _group_baseline(rewards: torch.Tensor, mask: torch.Tensor, uids: np.ndarray) -> torch.Tensor:
    """verl's REINFORCE++-baseline on the rows of informative groups; zero on the others."""
    advantages = torch.zeros_like(rewards)
    keep = informative_rows(rewards.sum(dim=-1), uids)
    if mask[keep].sum() >= 2:
        advantages[keep], _ = compute_reinforce_plus_plus_baseline_outcome_advantage(
            rewards[keep], mask[keep], index=uids[keep.numpy()]
        )
    return advantages


@register_adv_est(PER_ROLE_ESTIMATOR)
def compute_per_role_reinforce_plus_plus(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    config: Any = None,
    index: np.ndarray | None = None,
    **_: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(advantages, returns), both (batch, response_length): per role, group baselines or REINFORCE++.

    A role with fewer than two response tokens gets zero advantages (verl's padding rows, whose
    response mask is zero, are such a group). With group baselines the returns are the advantages,
    as in verl's estimator.
    """
    if config is None:
        raise ValueError(f"{PER_ROLE_ESTIMATOR} needs the algorithm config (for gamma)")
    if index is None:
        raise ValueError(f"{PER_ROLE_ESTIMATOR} needs the rows' uids (verl passes them as `index`)")
    uids = np.asarray(index, dtype=object)
    if _grouped(uids) and config.get("use_kl_in_reward", False):
        raise ValueError(
            f"{PER_ROLE_ESTIMATOR}: group baselines compare game scores, and algorithm.use_kl_in_reward=true puts "
            "the KL penalty in them; set algorithm.use_kl_in_reward=false and actor_rollout_ref.actor.use_kl_loss=true"
        )
    advantages = torch.zeros_like(token_level_rewards)
    returns = torch.zeros_like(token_level_rewards)
    for rows in role_groups(uids).values():
        mask = response_mask[rows]
        if mask.sum() < 2:
            continue
        rewards, role_uids = token_level_rewards[rows], uids[rows.numpy()]
        if _grouped(role_uids):
            adv = ret = _group_baseline(rewards, mask, role_uids)
        else:
            adv, ret = compute_reinforce_plus_plus_outcome_advantage(rewards, mask, config=config)
        advantages[rows] = adv
        returns[rows] = ret
    return advantages, returns
