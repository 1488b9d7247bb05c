"""The learning probe: a reward a tiny model learns in a few dozen steps, in place of the game's.

With `medplay.learning_probe.enabled` each turn's reward is 1.0 when the first token id of its
response has its role's parity and 0.0 otherwise: even for the assessor, odd for the attacker
(`swapped` exchanges them, the control run). Each parity is half of the vocabulary, so a random
model starts near 0.5 for both roles and the two roles are pushed in opposite directions. The
reward travels the game's own path (agent loop `reward_score`, per-role whitening, actor update,
weight sync); only where each role's number comes from differs. docs/game.md, "Learning probe".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from medical_team.verl_ext.settings import ProbeSettings
from medical_team.vocab import Role

# The first-token parity each role is rewarded for in the probe run (0 even, 1 odd).
_PARITY = {Role.ASSESSOR: 0, Role.ATTACKER: 1}


def rewarded_parity(probe: ProbeSettings, role: Role) -> int:
    """The first-token parity (0 even, 1 odd) that earns `role` the probe reward."""
    return 1 - _PARITY[role] if probe.swapped else _PARITY[role]


def probe_hit(probe: ProbeSettings, role: Role, response_ids: Sequence[int]) -> bool:
    """True when the response's first token id has the parity `role` is rewarded for."""
    return bool(response_ids) and response_ids[0] % 2 == rewarded_parity(probe, role)


def probe_metrics(hits: Iterable[tuple[str, bool]]) -> dict[str, float]:
    """`probe/<role>/hit_rate` and `probe/<role>/turns` over (role name, hit) pairs; empty when there are none."""
    by_role: dict[str, list[bool]] = defaultdict(list)
    for role, hit in hits:
        by_role[role].append(hit)
    metrics = {}
    for role, role_hits in by_role.items():
        metrics[f"probe/{role}/hit_rate"] = sum(role_hits) / len(role_hits)
        metrics[f"probe/{role}/turns"] = float(len(role_hits))
    return metrics
