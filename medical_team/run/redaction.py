"""Secrets out of what a run writes down: the values of settings named like secrets, in configs and overrides.

A name is a secret's when its last word is `token`, `secret`, `password` or `passwd`, or it ends in
`api_key`, `apikey`, `access_key`, `secret_key`, `private_key` or `auth_key` (any case, words split by `_`,
`-` or `.`): `WANDB_API_KEY`, `HF_TOKEN`, `medplay.judge.api_key`. A bare `key` is not enough: verl names the
columns of its data so (`data.prompt_key: prompt`), and `*_tokens` are lengths.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any

REDACTED = "<redacted>"
SECRET_NAME = re.compile(
    r"(^|[_.\-])(token|secret|password|passwd|api[_\-]?key|access[_\-]?key|secret[_\-]?key|private[_\-]?key"
    r"|auth[_\-]?key)$",
    re.IGNORECASE,
)


def is_secret_name(name: str) -> bool:
    """Whether a setting of this name holds a secret."""
    return SECRET_NAME.search(name) is not None


def redacted(value: Any) -> Any:
    """A copy of a plain config tree (dicts, lists, scalars) with every secret-named setting's value replaced."""
    if isinstance(value, dict):
        return {key: REDACTED if is_secret_name(str(key)) else redacted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [redacted(item) for item in value]
    return value


def redacted_overrides(overrides: Sequence[str]) -> list[str]:
    """Hydra overrides (`key=value`) with the value of every secret-named key replaced."""
    out = []
    for override in overrides:
        key, sep, _ = override.partition("=")
        out.append(f"{key}={REDACTED}" if sep and is_secret_name(key.strip()) else override)
    return out


if __name__ == "__main__":  # for shell scripts: the words of a command line, secret-named overrides redacted
    print(" ".join(redacted_overrides(sys.argv[1:])))
