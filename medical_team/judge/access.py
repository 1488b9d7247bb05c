"""Who may use the judge server and how many at once: a bearer token off loopback, a cap on requests in flight.

The token comes from the environment (`TOKEN_ENV`), never from an option or a config file, so it shows in no
process list, `config.yaml` or log. The server asks for it on every route but `/health` (a liveness probe
needs none); the client (`HttpJudge`) sends it when it is set.
"""

from __future__ import annotations

import ipaddress
import os

TOKEN_ENV = "MEDPLAY_JUDGE_TOKEN"
OPEN_PATHS = frozenset({"/health"})  # answered without a token


def judge_token() -> str | None:
    """The judge server's bearer token from the environment, or None when unset or empty."""
    return os.environ.get(TOKEN_ENV) or None


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bearer_header(token: str | None) -> dict[str, str]:
    """The request header that carries `token` (none without one)."""
    return {} if token is None else {"Authorization": f"Bearer {token}"}
