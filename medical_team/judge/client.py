"""`HttpJudge`: a `Judge` that asks the judge server (`POST /v1/judge`) with timeouts, retries and backoff.

A batch that still fails after its last retry becomes ties (counted); too many failed batches in a row raise
`JudgeUnavailableError` so that training stops instead of learning from ties. A server that answers 429 (too many
requests in flight) is waited for, up to `timeout_s`, without using up the tries (judge/retry.py); every retry is
counted in `stats`. A game the wire format
refuses (a rewrite over `MAX_NOTE_CHARS`, text that is not valid Unicode) is a tie with that reason, never
sent and never an outage.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import httpx
from pydantic import ValidationError

from medical_team.game.judging import JudgeRequest, JudgeVerdict
from medical_team.judge.access import bearer_header
from medical_team.judge.http_pool import judge_http_client
from medical_team.judge.outage import ConsecutiveFailures
from medical_team.judge.retry import RetryPolicy, describe_http_error, is_overloaded
from medical_team.judge.schemas import GameIn, JudgeBatchIn, JudgeBatchOut
from medical_team.judge.stats import JudgeCounters


class HttpJudge:
    """Client of a medplay judge server at `base_url` (e.g. http://127.0.0.1:8100)."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float = 300.0,
        batch_size: int = 64,
        retry: RetryPolicy | None = None,
        max_consecutive_failures: int | None = 5,
        token: str | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.batch_size = batch_size
        self.retry = retry or RetryPolicy()
        self.stats = JudgeCounters()
        self.failures = ConsecutiveFailures(self.base_url, max_consecutive_failures)
        self._client = judge_http_client(self.base_url, timeout_s=timeout_s, headers=bearer_header(token))

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """One verdict per request, in order; raises only `JudgeUnavailableError` after too many failed batches."""
        verdicts: list[JudgeVerdict] = []
        for offset in range(0, len(requests), self.batch_size):
            verdicts.extend(self._judge_batch(requests[offset : offset + self.batch_size]))
        return verdicts

    def _judge_batch(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        start = time.perf_counter()
        verdicts: list[JudgeVerdict | None] = []
        games: list[GameIn] = []
        for request in requests:
            game = _wire_game(request)
            verdicts.append(game if isinstance(game, JudgeVerdict) else None)
            if isinstance(game, GameIn):
                games.append(game)
        if games:
            answered = iter(self._post_batch(games))
            verdicts = [next(answered) if verdict is None else verdict for verdict in verdicts]
        done = [verdict for verdict in verdicts if verdict is not None]
        self.stats.record(done, time.perf_counter() - start)
        return done

    def _post_batch(self, games: list[GameIn]) -> list[JudgeVerdict]:
        """The server's verdicts on `games`; ties with the reason, and one failure counted, when it fails."""
        body = JudgeBatchIn(games=games).model_dump(mode="json")
        retried: list[BaseException] = []  # the errors of this batch's tries that were retried
        try:
            verdicts = self._post_with_retries(body, len(games), retried)
        except Exception as error:  # noqa: BLE001 - any failure of the batch becomes ties, then maybe a stop
            tries = len(retried) + 1
            reason = f"judge server {self.base_url} unavailable after {tries} {'try' if tries == 1 else 'tries'}: "
            reason += describe_http_error(error)
            self.stats.record_failed_batch()
            self.failures.failure(reason)
            return [JudgeVerdict.as_tie(reason) for _ in games]
        self.failures.success()
        return verdicts

    def _post_with_retries(self, body: dict, expected: int, retried: list[BaseException]) -> list[JudgeVerdict]:
        def on_retry(error: BaseException) -> None:
            retried.append(error)
            self.stats.record_retry(overloaded=is_overloaded(error))

        # an overloaded server (429) is waited for as long as one answer would be
        for attempt in self.retry.retrying(overload_s=self.timeout_s, on_retry=on_retry):
            with attempt:
                response = self._client.post("/v1/judge", json=body)
                response.raise_for_status()
        try:
            verdicts = [v.to_verdict() for v in JudgeBatchOut.model_validate_json(response.content).verdicts]
        except ValidationError as error:
            raise ValueError(f"server answer is not a verdict batch: {error.error_count()} problems") from None
        if len(verdicts) != expected:
            raise ValueError(f"server answered {len(verdicts)} verdicts for {expected} games")
        return verdicts

    def ready(self) -> bool:
        """True when the server answers GET /ready with 200."""
        try:
            return self._client.get("/ready", timeout=5.0).status_code == 200
        except httpx.HTTPError:
            return False

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()


def _wire_game(request: JudgeRequest) -> GameIn | JudgeVerdict:
    """The request in the wire format, or a tie naming the field the format refuses (without echoing it)."""
    try:
        return GameIn.from_request(request)
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        return JudgeVerdict.as_tie(f"judge request not sent: {where}: {problem['msg']}")
