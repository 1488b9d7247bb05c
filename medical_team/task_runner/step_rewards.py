"""The step-level reward terms in training, added once the step's games are known.

The agent loop settles each game alone and hands verl that game's reward; the terms that need the
step's other games (`medical_team.game.step_terms`: format against answers of the same kind, the
verdict balance, `difficulty_band`'s attacker outcome) are missing from it. Before verl computes
advantages, the trainer adds each row's difference to the last token of its `rm_scores` in
TransferQueue, where verl's agent loop put the game's reward; the group baselines, per-role
whitening and the update then see the full reward.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from medical_team.common.vocab import Role
from medical_team.game.rewards import RewardConfig
from medical_team.game.step_terms import with_step_terms
from medical_team.run.step_games import StepGame


def step_deltas(games: Sequence[StepGame], config: RewardConfig) -> dict[str, float]:
    """Row key -> the reward its step-level terms add to the game's own, for every trained row that changes."""
    deltas = {}
    for game, stepped in zip(games, with_step_terms([g.outcome for g in games], config), strict=True):
        for role in Role:
            key = game.row_keys.get(role.value)
            before, after = game.outcome.reward(role), stepped.reward(role)
            if key is not None and before is not None and after is not None and after != before:
                deltas[key] = after - before
    return deltas


def add_to_row_rewards(keys: Sequence[str], partition_id: str, deltas: Mapping[str, float]) -> int:
    """Add `deltas[key]` to the last response token's reward of each row of `keys` that has one; returns the rows changed."""
    import torch
    import transfer_queue as tq
    from tensordict import TensorDict

    changed = [key for key in keys if key in deltas]
    if not changed:
        return 0
    stored = tq.kv_batch_get(keys=changed, partition_id=partition_id, select_fields=["rm_scores"])["rm_scores"]
    scores = [row.clone() for row in stored.unbind(0)]
    for row, key in zip(scores, changed, strict=True):
        row[-1] += deltas[key]
    fields = TensorDict(
        {"rm_scores": torch.nested.as_nested_tensor(scores, layout=torch.jagged)}, batch_size=len(changed)
    )
    tq.kv_batch_put(keys=changed, partition_id=partition_id, fields=fields)
    return len(changed)
