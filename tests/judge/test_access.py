"""The judge server's access rules on real loopback servers: a bearer token, a cap on requests in flight, no
listening off loopback without a token; and the client's oversized games become ties, not exceptions."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from urllib.parse import urlparse

import pytest
from judge_helpers import HTTP, make_request, reworded, wait_until_ready, wire

from medical_team.data.records import GameSeed
from medical_team.judge.access import TOKEN_ENV
from medical_team.judge.client import HttpJudge
from medical_team.judge.retry import RetryPolicy
from medical_team.judge.rules import RulesJudge
from medical_team.judge.schemas import MAX_NOTE_CHARS
from medical_team.judge.scorer import JudgeScorer
from medical_team.judge_server.app import ServerSettings, create_app

TOKEN = "s3cret-judge-token"
RETRY = RetryPolicy(attempts=2, initial_backoff_s=0.01, max_backoff_s=0.02)
MEDPLAY = [sys.executable, "-c", "import sys; from medical_team.cli import main; sys.exit(main(sys.argv[1:]))"]


def judge_app(**settings: object):
    """The judge server with the rules backend and these settings."""
    return create_app(ServerSettings(**settings), JudgeScorer(RulesJudge))


def test_a_token_server_answers_only_requests_that_carry_it(serve, harmful: GameSeed) -> None:
    url = serve(judge_app(token=TOKEN)).url
    body = wire([make_request(harmful, reworded(harmful))])
    assert HTTP.get(f"{url}/health").status_code == 200  # liveness needs no token
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        refused = HTTP.post(f"{url}/v1/judge", json=body, headers=headers)
        assert refused.status_code == 401 and TOKEN_ENV in refused.json()["detail"]
        assert refused.headers["www-authenticate"] == "Bearer"
        assert HTTP.get(f"{url}/ready", headers=headers).status_code == 401
    answered = HTTP.post(f"{url}/v1/judge", json=body, headers={"Authorization": f"Bearer {TOKEN}"})
    assert answered.status_code == 200 and len(answered.json()["verdicts"]) == 1


def test_the_client_sends_the_token_and_without_it_gets_ties(serve, harmful: GameSeed) -> None:
    url = serve(judge_app(token=TOKEN)).url
    requests = [make_request(harmful, reworded(harmful))]
    assert HttpJudge(url, retry=RETRY, token=TOKEN).judge(requests) == RulesJudge().judge(requests)
    [tie] = HttpJudge(url, retry=RETRY, max_consecutive_failures=None).judge(requests)
    assert tie.tie and "HTTP 401" in tie.reason


def test_off_loopback_needs_a_token() -> None:
    with pytest.raises(ValueError, match=f"refusing to listen on 0.0.0.0.*without a token: set {TOKEN_ENV}"):
        ServerSettings(host="0.0.0.0")
    assert ServerSettings(host="0.0.0.0", token=TOKEN).token == TOKEN
    assert TOKEN not in repr(ServerSettings(host="0.0.0.0", token=TOKEN))


def test_medplay_judge_serve_refuses_a_public_address_without_a_token() -> None:
    env = {key: value for key, value in os.environ.items() if key != TOKEN_ENV}
    done = subprocess.run(
        [*MEDPLAY, "judge", "serve", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 2
    assert "field '--host': refusing to listen on 0.0.0.0" in done.stderr and TOKEN_ENV in done.stderr


def _open_request(url: str) -> socket.socket:
    """A POST whose body never finishes: it stays in flight until the socket closes."""
    address = urlparse(url)
    held = socket.create_connection((address.hostname, address.port))
    held.sendall(
        b"POST /v1/judge HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
    )
    return held


def test_requests_over_the_limit_in_flight_get_429_until_one_ends(serve) -> None:
    url = serve(judge_app(max_concurrent=1)).url
    wait_until_ready(url)
    held = _open_request(url)
    try:
        wait_until_ready(url, status=429)
        assert "the limit is 1" in HTTP.get(f"{url}/ready").json()["detail"]
    finally:
        held.close()
    wait_until_ready(url)


def test_a_game_too_long_for_the_wire_is_a_tie_and_the_rest_are_judged(serve, harmful: GameSeed) -> None:
    client = HttpJudge(serve(judge_app()).url, retry=RETRY)
    fine = make_request(harmful, reworded(harmful))
    huge = make_request(harmful, "x" * (MAX_NOTE_CHARS + 1))
    verdicts = client.judge([fine, huge, fine])
    assert verdicts[0] == verdicts[2] == RulesJudge().judge([fine])[0]
    assert verdicts[1].tie and verdicts[1].reason == (
        f"judge request not sent: rewrite: String should have at most {MAX_NOTE_CHARS} characters"
    )
    assert client.judge([huge])[0].tie and client.failures.count == 0 and client.stats.failed_batches == 0
