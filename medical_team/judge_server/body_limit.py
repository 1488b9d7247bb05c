"""ASGI middleware that refuses request bodies over a byte limit with 413, before any parsing."""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyLimitMiddleware:
    """Answer 413 to a request body over `max_bytes` (declared or streamed) before the app reads any of it."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._reject(scope, receive, send, "declared", more=True)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            more = message.get("more_body", False)
            if size > self.max_bytes:
                await self._reject(scope, receive, send, "streamed", more=more)
                return
            chunks.append(chunk)
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _reject(self, scope: Scope, receive: Receive, send: Send, how: str, *, more: bool) -> None:
        # Read (and drop) a bounded rest of the body first: a client still writing when the server closes
        # sees a broken pipe instead of this answer. `more` is False when the body has already ended (a loaded
        # server may receive all of it in one message): another receive() would then wait for the disconnect.
        drained = 0
        while more and drained <= 4 * self.max_bytes:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            drained += len(message.get("body", b""))
            more = message.get("more_body", False)
        detail = f"request body is larger than the limit of {self.max_bytes} bytes ({how} size); send smaller batches"
        await JSONResponse({"detail": detail, "errors": []}, status_code=413)(scope, receive, send)
