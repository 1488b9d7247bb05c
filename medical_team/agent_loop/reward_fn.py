"""verl's `custom_reward_function` for the assessor: score one response on the row's seed note.

Config: `reward.custom_reward_function.path=pkg://medical_team.agent_loop.reward_fn`,
`reward.custom_reward_function.name=compute_score`, and
`+reward.custom_reward_function.reward_kwargs.localisation_bonus=<b>` (default 0.0, as in `medplay.rewards`).
The score is the assessor's reward of a vanilla game on the seed (`medical_team.game.settle.score_assessor`),
the same function the judge server's OpenRLHF endpoint (`POST /judge`) scores with.
"""

from __future__ import annotations

from typing import Any

from medical_team.common.vocab import Label
from medical_team.game import RewardConfig
from medical_team.game.settle import score_assessor
from medical_team.run.rows import seed_of_row


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: dict[str, Any] | None = None,
    localisation_bonus: float = 0.0,
    **_: Any,
) -> dict[str, float]:
    """`score` (the assessor reward) plus `acc`, `format_ok` and `sentence_match`, the same keys for every row."""
    seed, _mode = seed_of_row(data_source, extra_info)
    if Label(ground_truth) is not seed.label:
        raise ValueError(
            f"row {seed.note_id}: ground_truth {ground_truth!r} contradicts extra_info label {seed.label.value!r}"
        )
    scored = score_assessor(seed, solution_str, RewardConfig(localisation_bonus=localisation_bonus))
    return {
        "score": scored.reward,
        "acc": float(scored.correct),
        "format_ok": float(scored.format_ok),
        "sentence_match": float(scored.sentence_match),
    }
