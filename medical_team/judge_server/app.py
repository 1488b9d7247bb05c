"""The judge HTTP server: `create_app(settings, scorer)` builds thin FastAPI routes around a `JudgeScorer`.

Run it with `medplay judge serve --backend rules` (loopback, port medplay.judge.server_port by default).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from medical_team.judge.access import TOKEN_ENV, is_loopback
from medical_team.judge.openrlhf_rewards import RewardInputError, reward_payload
from medical_team.judge.outage import JudgeUnavailableError
from medical_team.judge.schemas import ErrorOut, JudgeBatchIn, JudgeBatchOut, RewardBatchIn, RewardBatchOut, VerdictOut
from medical_team.judge.scorer import JudgeScorer, ScorerNotReady, ScorerState
from medical_team.judge_server.access_middleware import AccessMiddleware
from medical_team.judge_server.body_limit import BodyLimitMiddleware

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServerSettings:
    """Where the server listens, who may call it, and how much one request and all at once may carry."""

    host: str = "127.0.0.1"  # loopback unless the operator asks otherwise
    port: int = 0  # 0: a free port (tests); `medplay judge serve` passes medplay.judge.server_port
    max_body_bytes: int = 8 * 1024 * 1024
    max_batch: int = 256  # games per /v1/judge request, queries per /judge request
    max_concurrent: int = 64  # requests in flight (429 above); training's agent-loop workers send a few each
    token: str | None = field(default=None, repr=False)  # bearer token (access.TOKEN_ENV); required off loopback

    def __post_init__(self) -> None:
        if not is_loopback(self.host) and self.token is None:
            raise ValueError(
                f"refusing to listen on {self.host}, reachable from other machines, without a token: "
                f"set {TOKEN_ENV} (clients send it as Authorization: Bearer)"
            )
        if self.max_concurrent < 1:
            raise ValueError(f"max_concurrent must be >= 1, got {self.max_concurrent}")
        if self.max_body_bytes < 1024:
            raise ValueError(f"max_body_bytes must be >= 1024, got {self.max_body_bytes}")
        if self.max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {self.max_batch}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be in 0..65535, got {self.port}")


def _error(status: int, detail: str, errors: list[str] | None = None) -> JSONResponse:
    return JSONResponse(ErrorOut(detail=detail, errors=errors or []).model_dump(), status_code=status)


def _describe(errors: list[dict]) -> list[str]:
    """Validation errors as `where: what` lines, without echoing the (possibly huge or hostile) input."""
    lines = []
    for error in errors[:20]:
        where = ".".join(str(part) for part in error.get("loc", ()))
        message = str(error.get("msg", "invalid"))
        if error.get("type") == "json_invalid":
            message = f"malformed JSON: {error.get('ctx', {}).get('error', 'cannot be decoded')}"
            where = f"body at character {error['loc'][-1]}" if len(error.get("loc", ())) > 1 else "body"
        lines.append(f"{where}: {message}")
    return lines


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, error: RequestValidationError) -> JSONResponse:
        lines = _describe(list(error.errors()))
        return _error(422, f"invalid request: {lines[0] if lines else 'body does not match the schema'}", lines)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        detail = error.detail if isinstance(error.detail, str) else "request rejected"
        if error.status_code == 400 and "parsing the body" in detail:
            detail = "request body cannot be parsed as JSON: invalid UTF-8, nesting too deep or a number too long"
        return _error(error.status_code, detail)

    @app.exception_handler(ScorerNotReady)
    async def not_ready(request: Request, error: ScorerNotReady) -> JSONResponse:
        return _error(503, str(error))

    @app.exception_handler(JudgeUnavailableError)
    async def unavailable(request: Request, error: JudgeUnavailableError) -> JSONResponse:
        return _error(503, f"judge backend unavailable: {error}")

    @app.exception_handler(RewardInputError)
    async def bad_reward_item(request: Request, error: RewardInputError) -> JSONResponse:
        return _error(422, f"invalid request: {error}")


def _check_batch(count: int, settings: ServerSettings, what: str) -> JSONResponse | None:
    if count > settings.max_batch:
        return _error(413, f"batch of {count} {what} is over the limit of {settings.max_batch}; split it")
    return None


READY_PROBE_TIMEOUT_S = 30.0  # a backend that takes longer to settle one game is not ready
READY_PROBE_TTL_S = 10.0  # a probe's answer serves the readiness checks of this long


class ReadinessProbe:
    """Readiness that is progress, not liveness: the backend's verdict on a probe game, one probe at a time."""

    def __init__(self, scorer: JudgeScorer) -> None:
        self.scorer = scorer
        self._running: asyncio.Task | None = None
        self._answer: dict[str, Any] | None = None
        self._answered = 0.0

    async def answer(self) -> dict[str, Any]:
        """`{"status": "ready", "probe": {...}}`, or `{"status": "not ready", "detail": why}`."""
        if self._answer is not None and time.monotonic() - self._answered < READY_PROBE_TTL_S:
            return self._answer
        if self._running is None or self._running.done():  # a hung backend holds one thread, not one per check
            self._running = asyncio.ensure_future(run_in_threadpool(self.scorer.probe))
        try:
            verdict, seconds = await asyncio.wait_for(asyncio.shield(self._running), READY_PROBE_TIMEOUT_S)
        except TimeoutError:
            return {"status": "not ready", "detail": f"the judge backend gave no verdict on its readiness probe "
                    f"within {READY_PROBE_TIMEOUT_S:g} s"}  # fmt: skip
        except Exception as error:  # noqa: BLE001 - whatever the backend raised is the reason it is not ready
            return {"status": "not ready", "detail": f"the readiness probe failed: {type(error).__name__}: {error}"}
        probe = {"error_present": verdict.error_present, "faithful": verdict.faithful, "tie": verdict.tie}
        self._answer = {"status": "ready", "probe": {**probe, "seconds": round(seconds, 3)}}
        self._answered = time.monotonic()
        return self._answer


def create_app(settings: ServerSettings, scorer: JudgeScorer) -> FastAPI:
    """The judge server app: /health, /ready, POST /v1/judge (native batch), POST /judge (OpenRLHF rewards)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if scorer.state is ScorerState.LOADING:
            scorer.load_in_background()
        yield

    app = FastAPI(title="medplay judge", version="1", lifespan=lifespan)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    # added last, so it runs first: an unauthorised or surplus request is refused before its body is read
    app.add_middleware(AccessMiddleware, token=settings.token, max_concurrent=settings.max_concurrent)
    _install_error_handlers(app)
    errors = {status: {"model": ErrorOut} for status in (401, 413, 422, 429, 503)}

    @app.get("/health")
    async def health() -> dict[str, str]:
        """Liveness: the process answers."""
        return {"status": "ok"}

    readiness = ReadinessProbe(scorer)

    @app.get("/ready", responses={503: {"model": ErrorOut}})
    async def ready() -> JSONResponse:
        """Readiness: the backend is loaded and settles a probe game within READY_PROBE_TIMEOUT_S (503 with the reason
        while loading, after a failed load, or when the probe gets no verdict)."""
        if scorer.state is not ScorerState.READY:
            detail = f"judge backend is {scorer.state.value}" + (f": {scorer.failure}" if scorer.failure else "")
            return _error(503, detail)
        answer = await readiness.answer()
        return JSONResponse(answer) if answer["status"] == "ready" else _error(503, answer["detail"])

    @app.post("/v1/judge", response_model=JudgeBatchOut, responses=errors)
    async def judge(batch: JudgeBatchIn) -> JudgeBatchOut | JSONResponse:
        """Judge a batch of adversarial games: one verdict per game, in order."""
        if (rejected := _check_batch(len(batch.games), settings, "games")) is not None:
            return rejected
        verdicts = await run_in_threadpool(scorer.judge, [game.to_request() for game in batch.games])
        return JudgeBatchOut(verdicts=[VerdictOut.from_verdict(v) for v in verdicts])

    @app.post("/judge", response_model=RewardBatchOut, responses=errors)
    async def reward(batch: RewardBatchIn) -> RewardBatchOut | JSONResponse:
        """OpenRLHF remote reward model: assessor reward of each `query` (prompt + response) against its label."""
        if (rejected := _check_batch(len(batch.query), settings, "queries")) is not None:
            return rejected
        scores = await run_in_threadpool(scorer.score_assessor, batch.query, batch.prompts, batch.labels)
        return RewardBatchOut(**reward_payload(scores))

    return app
