"""The `difficulty_band` scheme in training: the attacker's outcome term, settled once the step's games are known.

The agent loop settles each game alone, so under `difficulty_band` the attacker's reward it hands
verl lacks the outcome term (it depends on the assessor's success rate over the step's games).
Before verl computes advantages, the trainer adds the term to the last token of each attacker row's
`rm_scores` in TransferQueue, where verl's agent loop put the game's reward; the KL penalty,
per-role whitening and the update then see the full reward.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from medical_team.game.difficulty_band import with_band_outcomes
from medical_team.verl_ext.step_games import StepGame
from medical_team.vocab import Role


def band_deltas(games: Sequence[StepGame]) -> dict[str, float]:
    """Attacker row key -> the reward to add to it (its band outcome term), for the games whose attacker trains."""
    deltas = {}
    for game, banded in zip(games, with_band_outcomes([g.outcome for g in games]), strict=True):
        key = game.row_keys.get(Role.ATTACKER.value)
        if key is None or banded.attacker_terms is None or game.outcome.attacker_terms is None:
            continue
        if "outcome" in banded.attacker_terms:
            deltas[key] = banded.attacker_terms["outcome"] - game.outcome.attacker_terms.get("outcome", 0.0)
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
    fields = TensorDict({"rm_scores": torch.nested.as_nested_tensor(scores, layout=torch.jagged)}, batch_size=len(changed))
    tq.kv_batch_put(keys=changed, partition_id=partition_id, fields=fields)
    return len(changed)
