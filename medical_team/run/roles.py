"""Which role a training row belongs to, carried in the row's uid as `<prompt uid>_<role>`.

verl hands an advantage estimator only the rows' uids (`index`), so the role travels there. The
prompt uid stays the part before the first `_`, which is how verl's replay buffer groups a
prompt's trajectories; padding rows (`pad<hex>`) and rows from other agent loops have no role.
"""

from __future__ import annotations

from collections.abc import Iterable

from medical_team.common.vocab import Role

_SEPARATOR = "_"


def role_uid(prompt_uid: str, role: Role) -> str:
    """The uid of one role's row of a game started from `prompt_uid`."""
    if _SEPARATOR in prompt_uid:
        raise ValueError(f"prompt uid {prompt_uid!r} contains {_SEPARATOR!r}; verl's uids are uuid4 strings")
    return f"{prompt_uid}{_SEPARATOR}{role.value}"


def row_key(prompt_uid: str, role: Role, session_id: int) -> str:
    """The TransferQueue key verl stores one role's output under (`<uid>_<session>_<index>`, one output each)."""
    return f"{role_uid(prompt_uid, role)}{_SEPARATOR}{session_id}{_SEPARATOR}0"


def role_of_uid(uid: str) -> Role | None:
    """The role a row uid names, or None for rows without one (padding, other agent loops)."""
    _, _, suffix = str(uid).partition(_SEPARATOR)
    head = suffix.split(_SEPARATOR, 1)[0]
    return Role(head) if head in {r.value for r in Role} else None


def role_of_key(key: str) -> Role | None:
    """The role of a TransferQueue trajectory key (`<uid>_<role>_<session>_<index>`), or None."""
    return role_of_uid(key)


def roles_of(uids: Iterable[str]) -> list[Role | None]:
    """`role_of_uid` for every uid, in order."""
    return [role_of_uid(uid) for uid in uids]
