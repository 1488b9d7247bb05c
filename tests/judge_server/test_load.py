"""The judge server under load: thousands of calls and bursts over `--max-concurrent` through a real `medplay judge
serve` process and the real client (`HttpJudge`); every verdict comes back once, to its own game, every 429 is retried.

The server judges with the `openai` backend over a scripted model on loopback, so every code path of the server runs
(the access and body-limit middleware, the route, the scorer, the model judge and its OpenAI client). The model
echoes each rewrite's game tag as the error sentence (medical_team/bench/judge_load.py), and during a burst it holds its answers
until the client has been refused MAX_CONCURRENT times: the server is full while it holds, so the 429s are certain,
not a matter of timing. The speed of all this is the benchmark's (`medplay bench judge-server`), not this test's.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from loopback_apps import fenced_rewrite

from medical_team.bench.judge_load import Ledger, ServedJudge, game, tag, tagged_game
from medical_team.judge.client import HttpJudge
from medical_team.judge.retry import RetryPolicy
from medical_team.judge_server.serving import BackgroundServer

pytestmark = pytest.mark.slow

MAX_CONCURRENT = 8
CALLS = 1500  # of 1 to 4 games each, a third of them copies that a rule settles: ~3,750 games, ~2,250 requests
IN_FLIGHT = 2 * MAX_CONCURRENT
BURSTS = 3
CLIENT_BATCH = 2  # games per request: a call of 3 or 4 games is two requests
RETRY = RetryPolicy(attempts=3, initial_backoff_s=0.01, max_backoff_s=0.1)
HOLD_GUARD_S = 120  # how long the model holds an answer at most (the test then fails on the 429 count)


class Hold:
    """While `until` is set and says no, the scripted model keeps its answers."""

    def __init__(self) -> None:
        self.until: Callable[[], bool] | None = None

    async def wait(self) -> None:
        deadline = time.monotonic() + HOLD_GUARD_S
        while (until := self.until) is not None and not until() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)


def scripted_model(hold: Hold) -> FastAPI:
    """An OpenAI-compatible chat endpoint answering in the judge's format, the rewrite's game tag as error sentence."""
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def complete(request: Request) -> JSONResponse:
        body = await request.json()
        number = tagged_game(fenced_rewrite(body["messages"][-1]["content"]))
        await hold.wait()
        content = f"error_present: yes\nfaithful: yes\nerror_sentence: {tag(number) if number is not None else '?'}"
        return JSONResponse({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]})

    return app


def _calls(count: int) -> list[list[int]]:
    """`count` calls of 1, 2, 3, 4, 1, ... games, numbered from 0."""
    numbers = itertools.count()
    return [[next(numbers) for _ in range(1 + k % 4)] for k in range(count)]


def test_every_verdict_comes_back_once_to_its_game_through_bursts_of_429(tmp_path: Path) -> None:
    hold = Hold()
    steady = _calls(CALLS)
    first_burst_game = sum(map(len, steady))
    bursts = [[[first_burst_game + b * IN_FLIGHT + i] for i in range(IN_FLIGHT)] for b in range(BURSTS)]
    ledger = Ledger(first_burst_game + BURSTS * IN_FLIGHT)

    with BackgroundServer(scripted_model(hold)) as model:
        args = ["--backend", "openai", "--url", f"{model.url}/v1", "--model", "scripted",
                "--max-concurrent", str(MAX_CONCURRENT)]  # fmt: skip
        with ServedJudge(args, tmp_path / "judge-server.log") as server:
            client = HttpJudge(server.url, batch_size=CLIENT_BATCH, retry=RETRY)

            def call(numbers: list[int]) -> None:
                # games numbered 0 mod 3 repeat their seed: a rule settles them, between the model's verdicts
                requests = [game(number, copy=number % 3 == 0) for number in numbers]
                ledger.record(numbers, client.judge(requests))

            with ThreadPoolExecutor(IN_FLIGHT) as pool:
                list(pool.map(call, steady))
                for burst in bursts:
                    refused = client.stats.overloaded
                    hold.until = lambda refused=refused: client.stats.overloaded >= refused + MAX_CONCURRENT
                    list(pool.map(call, burst))
                    assert client.stats.overloaded >= refused + MAX_CONCURRENT
                    hold.until = None
            client.close()
        assert server.returncode == 0

    assert ledger.clean(), ledger.summary() | {"first ties": ledger.ties[:3]}
    requests_sent = sum(-(-len(numbers) // CLIENT_BATCH) for numbers in steady) + BURSTS * IN_FLIGHT
    assert server.answered(200) == requests_sent
    # every 429 the server sent was retried by the client, and none was its last word on a batch
    assert server.answered(429) == client.stats.overloaded >= BURSTS * MAX_CONCURRENT
    assert client.stats.failed_batches == 0
