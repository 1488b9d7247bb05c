"""The body limit answers 413 whichever way the oversized body arrives, and never waits for more after its end."""

from __future__ import annotations

import asyncio
import json

from starlette.types import Message

from medical_team.judge_server.body_limit import BodyLimitMiddleware

LIMIT = 64


async def never_called(scope, receive, send) -> None:
    raise AssertionError("the app must not see an oversized body")


def answer(messages: list[Message], headers: list[tuple[bytes, bytes]] | None = None) -> tuple[int, dict, int]:
    """(status, JSON body, messages read) of the middleware given the request's messages; fails if it reads more."""
    pending, sent = list(messages), []

    async def receive() -> Message:
        assert pending, "the middleware waited for a message after the body had ended"
        return pending.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/judge", "headers": headers or []}
    asyncio.run(asyncio.wait_for(BodyLimitMiddleware(never_called, LIMIT)(scope, receive, send), timeout=10))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(body), len(messages) - len(pending)


def test_a_body_that_arrives_whole_in_one_message_is_refused_without_waiting_for_more() -> None:
    # What a loaded server sees when the whole streamed body was buffered before the app first read it.
    status, body, read = answer([{"type": "http.request", "body": b"x" * (3 * LIMIT), "more_body": False}])
    assert (status, read) == (413, 1)
    assert "streamed size" in body["detail"]


def test_a_streamed_body_is_drained_to_its_end_then_refused() -> None:
    chunks = [{"type": "http.request", "body": b"x" * 40, "more_body": True} for _ in range(4)]
    status, body, read = answer([*chunks, {"type": "http.request", "body": b"", "more_body": False}])
    assert (status, read) == (413, 5)
    assert "larger than the limit of 64 bytes (streamed size)" in body["detail"]


def test_a_declared_oversized_body_is_refused_after_draining_it() -> None:
    messages = [{"type": "http.request", "body": b"x" * 100, "more_body": False}]
    status, body, read = answer(messages, headers=[(b"content-length", b"100")])
    assert (status, read) == (413, 1)
    assert "declared size" in body["detail"]
