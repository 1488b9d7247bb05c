"""The learning probe: a reward a tiny model learns in a few dozen steps, in place of the game's.

Each role has its own behaviour, read off the first token of its response: the assessor's is an
even token id, the attacker's a token id in the lower half of the vocabulary. With
`medplay.learning_probe.enabled` a turn earns 1.0 when it shows its role's behaviour and 0.0
otherwise; with `inverted` (the control run) the other way round. Both behaviours cover half of the
vocabulary, so a random model starts near 0.5, and they are independent of each other, so a model
that cannot yet tell the roles apart can still learn both at once (docs/game.md, "Learning probe").
The reward travels the game's own path (agent loop `reward_score`, per-role whitening, actor
update, weight sync to the rollout); only where each role's number comes from differs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from medical_team.common.vocab import Role
from medical_team.run.settings import ProbeSettings


def shows_behaviour(role: Role, response_ids: Sequence[int], vocab_size: int) -> bool:
    """True when the response's first token is `role`'s probe behaviour (assessor: even id; attacker: lower half)."""
    if not response_ids:
        return False
    first = response_ids[0]
    return first % 2 == 0 if role is Role.ASSESSOR else first < vocab_size // 2


def probe_reward(probe: ProbeSettings, shown: bool) -> float:
    """1.0 for showing the behaviour (for not showing it when `inverted`), else 0.0."""
    return float(shown != probe.inverted)


def probe_metrics(observations: Iterable[tuple[str, bool]]) -> dict[str, float]:
    """`probe/<role>/behaviour_rate` and `probe/<role>/turns` over (role name, shown) pairs; empty without any."""
    by_role: dict[str, list[bool]] = defaultdict(list)
    for role, shown in observations:
        by_role[role].append(shown)
    metrics = {}
    for role, shown in by_role.items():
        metrics[f"probe/{role}/behaviour_rate"] = sum(shown) / len(shown)
        metrics[f"probe/{role}/turns"] = float(len(shown))
    return metrics
