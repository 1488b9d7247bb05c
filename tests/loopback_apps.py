"""Small real HTTP services the judge talks to in tests: an OpenAI-compatible chat endpoint and failing servers."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Literal

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from medical_team.judge.scorer import JudgeScorer


@dataclass
class Calls:
    """What a loopback service received."""

    count: int = 0
    models: list[str] = field(default_factory=list)


def _chat_reply(rewrite: str) -> str | None:
    """The scripted judge: markers in the rewritten note decide its answer (None means answer HTTP 500)."""
    if "[fail]" in rewrite:
        return None
    if "[garbled]" in rewrite:
        return "I am not sure what to say about this note."
    error = "yes" if "[err]" in rewrite else "no"
    faithful = "no" if "[unfaithful]" in rewrite else "yes"
    sentence = "\nerror_sentence: The marked sentence [err]." if error == "yes" else ""
    return f"error_present: {error}\nfaithful: {faithful}{sentence}"


_FENCED_REWRITE = re.compile(r"^<<<REWRITE (\w+)>>>\n(.*)\n<<<END REWRITE \1>>>$", re.DOTALL | re.MULTILINE)


def fenced_rewrite(user: str) -> str:
    """The rewrite between the judge prompt's fences ("" when there is none)."""
    match = _FENCED_REWRITE.search(user)
    return match.group(2) if match else ""


def chat_completions_app(calls: Calls, *, echo: Literal["conversation", "rewrite"] | None = None) -> FastAPI:
    """An OpenAI-compatible `/v1/chat/completions` endpoint that answers in the judge's format; with `echo`, it
    first repeats the whole conversation it was sent, or only the rewrite, as a careless model may."""
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def complete(request: Request) -> JSONResponse:
        body = await request.json()
        calls.count += 1
        calls.models.append(body["model"])
        rewrite = fenced_rewrite(body["messages"][-1]["content"])
        reply = _chat_reply(rewrite)
        if reply is None:
            return JSONResponse({"error": "upstream exploded"}, status_code=500)
        if echo == "conversation":
            reply = "\n\n".join([*(message["content"] for message in body["messages"]), reply])
        elif echo == "rewrite":
            reply = f"{rewrite}\n{reply}"
        return JSONResponse({"choices": [{"index": 0, "message": {"role": "assistant", "content": reply}}]})

    return app


def failing_app(calls: Calls, *, status: int = 500, hang_s: float = 0.0) -> FastAPI:
    """Answers every request on any path with `status` (after hanging `hang_s` seconds)."""
    app = FastAPI()

    @app.api_route("/{path:path}", methods=["GET", "POST"])
    async def fail(path: str) -> JSONResponse:
        calls.count += 1
        if hang_s:
            await asyncio.sleep(hang_s)
        return JSONResponse({"detail": "internal error"}, status_code=status)

    return app


def flaky_judge_app(calls: Calls, scorer: JudgeScorer, failures: int, status: int = 500) -> FastAPI:
    """A judge server whose first `failures` judge requests answer `status`, then it judges with `scorer`."""
    from medical_team.judge_server.app import ServerSettings, create_app

    app = create_app(ServerSettings(), scorer)

    @app.middleware("http")
    async def fail_first(request: Request, call_next):
        if request.url.path == "/v1/judge":
            calls.count += 1
            if calls.count <= failures:
                return JSONResponse({"detail": "warming up"}, status_code=status)
        return await call_next(request)

    return app
