"""ASGI middleware of the judge server's access rules (medical_team/judge/access.py): the token, then the cap on requests in flight."""

from __future__ import annotations

import hmac

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from medical_team.judge.access import OPEN_PATHS, TOKEN_ENV


class AccessMiddleware:
    """Answer 401 to a request without the bearer token (when one is set) and 429 to one over `max_concurrent`
    requests in flight, before the app reads its body."""

    def __init__(self, app: ASGIApp, token: str | None, max_concurrent: int) -> None:
        self.app = app
        self.expected = None if token is None else f"Bearer {token}".encode()
        self.max_concurrent = max_concurrent
        self.in_flight = 0  # one event loop: no lock needed between the check and the increment

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if self.expected is not None and not hmac.compare_digest(
            dict(scope["headers"]).get(b"authorization", b""), self.expected
        ):
            detail = f"a bearer token is required (Authorization: Bearer <the server's {TOKEN_ENV}>)"
            headers = {"WWW-Authenticate": "Bearer"}
            await JSONResponse({"detail": detail, "errors": []}, status_code=401, headers=headers)(scope, receive, send)
            return
        if self.in_flight >= self.max_concurrent:
            detail = f"{self.in_flight} requests in flight, the limit is {self.max_concurrent}; retry later"
            await JSONResponse({"detail": detail, "errors": []}, status_code=429)(scope, receive, send)
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
