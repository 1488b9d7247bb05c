"""The `openai` backend against a real OpenAI-compatible chat endpoint on loopback."""

from __future__ import annotations

import pytest
from judge_helpers import FAST, FAST_RETRY, HTTP, make_request, openai_judge, reworded, wait_until_ready, wire
from loopback_apps import Calls, chat_completions_app, failing_app

from medical_team.common.errors import UserInputError
from medical_team.common.vocab import Label
from medical_team.data.records import GameSeed
from medical_team.judge.backends import build_judge
from medical_team.judge.outage import JudgeUnavailableError
from medical_team.judge.scorer import JudgeScorer
from medical_team.judge.settings import packaged_judge_settings
from medical_team.judge_server.app import ServerSettings, create_app


def test_model_answers_parse_and_rules_run_first(serve, seed_pairs: list[tuple[GameSeed, GameSeed]]) -> None:
    calls = Calls()
    judge = openai_judge(serve(chat_completions_app(calls)).url, batch_size=2)
    harmful, benign = seed_pairs[3]
    requests = [
        make_request(harmful, reworded(harmful, " [err]")),
        make_request(benign, reworded(benign, " [err] [unfaithful]")),
        make_request(benign, reworded(benign), Label.NO_ERROR),
        make_request(harmful, ""),  # settled by a rule: no model call
        make_request(benign, benign.text * 3 + " [err]"),  # too long: the model decides the error only
    ]
    verdicts = judge.judge(requests)
    assert [(v.error_present, v.faithful) for v in verdicts] == [
        (True, True),
        (True, False),
        (False, True),
        (False, False),
        (True, False),
    ]
    assert verdicts[0].error_sentence == "The marked sentence [err]."
    assert verdicts[3].reason == "rule:empty_rewrite"
    assert verdicts[4].reason.startswith("rule:length_ratio")
    assert calls.count == 4 and set(calls.models) == {"judge-model"}
    metrics = judge.stats.metrics()
    assert metrics["judge/calls"] == 5 and metrics["judge/parse_error_rate"] == 0.0
    assert metrics["judge/latency_s"] > 0


def test_unparseable_output_is_a_counted_parse_error_tie(serve, harmful: GameSeed) -> None:
    judge = openai_judge(serve(chat_completions_app(Calls())).url)
    verdicts = judge.judge(
        [make_request(harmful, reworded(harmful, " [garbled]")), make_request(harmful, reworded(harmful))]
    )
    assert verdicts[0].tie and verdicts[0].parse_error
    assert not verdicts[1].tie
    metrics = judge.stats.metrics()
    assert metrics["judge/parse_error_rate"] == 0.5 and metrics["judge/ties"] == 1


def test_one_failing_conversation_is_retried_then_a_tie(serve, harmful: GameSeed) -> None:
    calls = Calls()
    judge = openai_judge(serve(chat_completions_app(calls)).url)
    verdicts = judge.judge(
        [make_request(harmful, reworded(harmful, " [fail]")), make_request(harmful, reworded(harmful))]
    )
    assert verdicts[0].tie and not verdicts[0].parse_error
    assert "HTTP 500" in verdicts[0].reason
    assert not verdicts[1].tie
    assert calls.count == FAST_RETRY.attempts + 1
    assert judge.stats.failed_batches == 0  # part of the batch got through


def test_endpoint_down_gives_ties_then_stops_the_run(serve, harmful: GameSeed) -> None:
    calls = Calls()
    judge = openai_judge(serve(failing_app(calls, status=503)).url, max_consecutive_failures=2)
    first = judge.judge([make_request(harmful, reworded(harmful))])
    assert first[0].tie and "unavailable" in first[0].reason
    assert calls.count == FAST_RETRY.attempts
    with pytest.raises(JudgeUnavailableError, match=r"failed 2 consecutive batches: HTTP 503"):
        judge.judge([make_request(harmful, reworded(harmful))])
    assert judge.stats.failed_batches == 2


def test_openai_backend_needs_url_and_model() -> None:
    with pytest.raises(UserInputError, match="medplay.judge.url: with medplay.judge.model, required"):
        packaged_judge_settings(backend="openai", url=None)
    with pytest.raises(UserInputError, match="medplay.judge.backend: 'gpt' must be one of rules, vllm"):
        packaged_judge_settings(backend="gpt")
    with pytest.raises(ValueError, match="'vllm' needs url"):  # filled in by `medplay train`
        build_judge(packaged_judge_settings(backend="vllm", url=None))


def test_server_answers_503_when_its_upstream_is_down(serve, harmful: GameSeed) -> None:
    upstream = serve(failing_app(Calls())).url
    settings = packaged_judge_settings(backend="openai", url=f"{upstream}/v1", model="m", max_consecutive_failures=1)
    url = serve(create_app(ServerSettings(), JudgeScorer(lambda: build_judge(settings, FAST)))).url
    wait_until_ready(url)
    response = HTTP.post(f"{url}/v1/judge", json=wire([make_request(harmful, reworded(harmful))]))
    assert response.status_code == 503
    assert "judge backend unavailable" in response.json()["detail"] and "HTTP 500" in response.json()["detail"]
    # a game settled by a rule needs no upstream
    assert HTTP.post(f"{url}/v1/judge", json=wire([make_request(harmful, "")])).status_code == 200
