"""`HttpJudge` against real servers on loopback: a working judge, one that fails, hangs, recovers or is gone."""

from __future__ import annotations

import pytest
from judge_helpers import make_request, reworded, rules_app
from loopback_apps import Calls, failing_app, flaky_judge_app

from medical_team.common.vocab import Label
from medical_team.data.records import GameSeed
from medical_team.game.judging import JudgeRequest
from medical_team.judge.client import HttpJudge
from medical_team.judge.outage import JudgeUnavailableError
from medical_team.judge.retry import RetryPolicy
from medical_team.judge.rules import RulesJudge
from medical_team.judge.scorer import JudgeScorer
from medical_team.judge_server.serving import BackgroundServer

RETRY = RetryPolicy(attempts=3, initial_backoff_s=0.01, max_backoff_s=0.05)


@pytest.fixture
def requests(seed_pairs: list[tuple[GameSeed, GameSeed]]) -> list[JudgeRequest]:
    """Five games: reworded, copied and empty rewrites of real seeds."""
    harmful, benign = seed_pairs[4]
    return [
        make_request(harmful, reworded(harmful)),
        make_request(benign, reworded(benign)),
        make_request(benign, reworded(benign), Label.NO_ERROR),
        make_request(benign, benign.text),
        make_request(harmful, ""),
    ]


def test_client_returns_the_servers_verdicts_in_order(serve, requests: list[JudgeRequest]) -> None:
    client = HttpJudge(serve(rules_app()).url, batch_size=2, retry=RETRY)
    assert client.ready()
    assert client.judge(requests) == RulesJudge().judge(requests)
    assert client.stats.batches == 3 and client.stats.calls == 5 and client.stats.ties == 0


def test_server_answering_500_is_retried_then_ties(serve, requests: list[JudgeRequest]) -> None:
    calls = Calls()
    client = HttpJudge(serve(failing_app(calls)).url, retry=RETRY, max_consecutive_failures=None)
    verdicts = client.judge(requests)
    assert calls.count == RETRY.attempts
    assert all(v.tie and not v.parse_error for v in verdicts) and len(verdicts) == len(requests)
    assert "unavailable after 3 tries: HTTP 500" in verdicts[0].reason
    metrics = client.stats.metrics()
    assert metrics["judge/ties"] == 5 and metrics["judge/tie_rate"] == 1.0 and metrics["judge/failed_batches"] == 1


def test_hanging_server_times_out_retries_then_ties(serve, requests: list[JudgeRequest]) -> None:
    calls = Calls()
    # The server answers after two minutes: only the client's own 0.2 s timeout ends its tries with a ReadTimeout.
    client = HttpJudge(serve(failing_app(calls, hang_s=120)).url, timeout_s=0.2, retry=RETRY)
    verdicts = client.judge(requests[:2])
    assert calls.count == RETRY.attempts
    assert all(v.tie for v in verdicts) and "ReadTimeout" in verdicts[0].reason
    assert client.stats.failed_batches == 1


def test_server_that_recovers_gives_real_verdicts(serve, requests: list[JudgeRequest]) -> None:
    calls = Calls()
    client = HttpJudge(serve(flaky_judge_app(calls, JudgeScorer(RulesJudge), failures=2)).url, retry=RETRY)
    assert client.judge(requests) == RulesJudge().judge(requests)
    assert calls.count == 3 and client.stats.ties == 0


def test_an_overloaded_server_is_waited_for_beyond_the_tries(serve, requests: list[JudgeRequest]) -> None:
    calls = Calls()
    # 429 answers (too many requests in flight) do not use up the 3 tries: the sixth request is judged
    client = HttpJudge(serve(flaky_judge_app(calls, JudgeScorer(RulesJudge), failures=5, status=429)).url, retry=RETRY)
    assert client.judge(requests) == RulesJudge().judge(requests)
    assert calls.count == 6 and client.stats.retries == client.stats.overloaded == 5
    assert client.stats.metrics()["judge/overloaded"] == 5 and client.stats.failed_batches == 0


def test_a_server_overloaded_past_the_timeout_gives_ties(serve, requests: list[JudgeRequest]) -> None:
    calls = Calls()
    # the server answers 429 for good: the client waits as long as it would for one answer, then gives up
    client = HttpJudge(serve(failing_app(calls, status=429)).url, timeout_s=1.0, retry=RETRY)
    verdicts = client.judge(requests[:1])
    assert verdicts[0].tie and "HTTP 429" in verdicts[0].reason and f"after {calls.count} tries" in verdicts[0].reason
    assert client.stats.overloaded == client.stats.retries == calls.count - 1 and client.stats.failed_batches == 1


def test_client_errors_are_not_retried(serve, requests: list[JudgeRequest]) -> None:
    client = HttpJudge(serve(rules_app(max_batch=2)).url, batch_size=4, retry=RETRY)
    verdicts = client.judge(requests[:4])
    assert all(v.tie for v in verdicts) and "HTTP 413" in verdicts[0].reason


def test_dead_server_stops_the_run_after_the_limit(requests: list[JudgeRequest]) -> None:
    server = BackgroundServer(rules_app()).start()
    url = server.url
    client = HttpJudge(url, retry=RETRY, max_consecutive_failures=3)
    assert not client.judge(requests[:1])[0].tie
    server.stop()
    for _ in range(2):
        assert client.judge(requests[:1])[0].tie
    with pytest.raises(JudgeUnavailableError) as stopped:
        client.judge(requests[:1])
    message = str(stopped.value)
    assert message.startswith(f"judge at {url} failed 3 consecutive batches: ")
    assert "ConnectError" in message
    assert client.stats.failed_batches == 3


def test_a_good_batch_resets_the_failure_streak(serve, requests: list[JudgeRequest]) -> None:
    calls = Calls()
    # each judge() call is one batch; the flaky server fails the first 2 requests (= the first batch's tries)
    client = HttpJudge(
        serve(flaky_judge_app(calls, JudgeScorer(RulesJudge), failures=2)).url,
        retry=RetryPolicy(attempts=2, initial_backoff_s=0.01),
        max_consecutive_failures=2,
    )
    assert client.judge(requests[:1])[0].tie
    assert client.failures.count == 1
    assert not client.judge(requests[:1])[0].tie
    assert client.failures.count == 0
