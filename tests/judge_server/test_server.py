"""The judge server over real HTTP (uvicorn on a loopback port): every endpoint, limits and clear 4xx answers."""

from __future__ import annotations

import json
import threading

import httpx
import pytest
from judge_helpers import HTTP, make_request, reworded, rules_app, wait_until_ready, wire

from medical_team.common.vocab import Label
from medical_team.data.records import GameSeed
from medical_team.game.prompts import THINKING_PREFIX, assessor_messages
from medical_team.judge.rules import RulesJudge
from medical_team.judge.scorer import READINESS_PROBE, JudgeScorer
from medical_team.judge_server import app as app_module
from medical_team.judge_server.app import ServerSettings, create_app


@pytest.fixture
def url(serve) -> str:
    """Base URL of a running rules-backed judge server (64 KiB body limit, 8 games per batch)."""
    return serve(rules_app()).url


def test_health_and_ready(url: str) -> None:
    """Readiness carries the backend's real verdict on its probe game (a clean note rewritten as itself)."""
    assert HTTP.get(f"{url}/health").json() == {"status": "ok"}
    ready = HTTP.get(f"{url}/ready").json()
    (expected,) = RulesJudge().judge([READINESS_PROBE])
    assert ready["status"] == "ready" and ready["probe"]["seconds"] >= 0
    assert (ready["probe"]["error_present"], ready["probe"]["faithful"], ready["probe"]["tie"]) == (
        expected.error_present, expected.faithful, expected.tie,
    )  # fmt: skip


def test_a_backend_that_never_answers_is_not_ready(serve, monkeypatch: pytest.MonkeyPatch) -> None:
    """Liveness is not readiness: /health answers, /ready says the probe got no verdict, one probe thread at most."""
    monkeypatch.setattr(app_module, "READY_PROBE_TIMEOUT_S", 0.5)
    hung = threading.Event()
    calls = []

    class SilentJudge(RulesJudge):
        def judge(self, requests):
            calls.append(len(requests))
            hung.wait(30)
            return super().judge(requests)

    url = serve(create_app(ServerSettings(), JudgeScorer(SilentJudge))).url
    assert HTTP.get(f"{url}/health").status_code == 200
    for _ in range(3):
        response = HTTP.get(f"{url}/ready")
        if response.status_code == 503 and "readiness probe" in response.json()["detail"]:
            break
    assert response.status_code == 503
    assert response.json()["detail"] == "the judge backend gave no verdict on its readiness probe within 0.5 s"
    assert HTTP.get(f"{url}/ready").status_code == 503 and calls == [1]  # the first probe still runs: no second
    hung.set()


def test_judge_batch_matches_in_process_judge(url: str, seed_pairs: list[tuple[GameSeed, GameSeed]]) -> None:
    harmful, benign = seed_pairs[2]
    requests = [
        make_request(harmful, reworded(harmful)),
        make_request(benign, reworded(benign), Label.NO_ERROR),
        make_request(benign, benign.text),
        make_request(harmful, ""),
    ]
    response = HTTP.post(f"{url}/v1/judge", json=wire(requests))
    assert response.status_code == 200
    got = [(v["error_present"], v["faithful"], v["reason"]) for v in response.json()["verdicts"]]
    expected = [(v.error_present, v.faithful, v.reason) for v in RulesJudge().judge(requests)]
    assert got == expected


def _post_raw(url: str, path: str, body: bytes, content_type: str = "application/json") -> httpx.Response:
    return HTTP.post(f"{url}{path}", content=body, headers={"content-type": content_type})


@pytest.mark.parametrize("path", ["/v1/judge", "/judge"])
def test_malformed_json_is_422_with_a_message(url: str, path: str) -> None:
    response = _post_raw(url, path, b'{"games": [{"seed": ')
    assert response.status_code == 422
    assert "malformed JSON" in response.json()["detail"]


def test_schema_errors_name_the_field(url: str, harmful: GameSeed) -> None:
    body = wire([make_request(harmful, reworded(harmful))])
    body["games"][0]["seed"]["label"] = "maybe"
    response = HTTP.post(f"{url}/v1/judge", json=body)
    assert response.status_code == 422
    assert "games.0.seed.label" in response.json()["detail"]


def test_vanilla_games_are_rejected(url: str, harmful: GameSeed) -> None:
    body = wire([make_request(harmful, reworded(harmful))])
    body["games"][0]["seed"]["category"] = "vanilla_harmful"
    response = HTTP.post(f"{url}/v1/judge", json=body)
    assert response.status_code == 422 and "vanilla" in response.json()["detail"]


def test_oversized_body_is_413(url: str) -> None:
    big = json.dumps({"games": [], "padding": "x" * 70_000}).encode()
    response = _post_raw(url, "/v1/judge", big)
    assert response.status_code == 413
    assert "larger than the limit of 65536 bytes" in response.json()["detail"]


def test_oversized_streamed_body_without_length_is_413(url: str) -> None:
    def chunks():
        for _ in range(20):
            yield b"x" * 8192

    response = HTTP.post(f"{url}/v1/judge", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413 and "streamed" in response.json()["detail"]


def test_batch_over_limit_is_413(url: str, seed_pairs: list[tuple[GameSeed, GameSeed]]) -> None:
    requests = [make_request(h, "") for h, _ in seed_pairs[:9]]
    response = HTTP.post(f"{url}/v1/judge", json=wire(requests))
    assert response.status_code == 413
    assert "batch of 9 games is over the limit of 8" in response.json()["detail"]


def test_wrong_method_and_unknown_path_are_4xx(url: str) -> None:
    assert HTTP.get(f"{url}/v1/judge").status_code == 405
    assert HTTP.get(f"{url}/nope").status_code == 404


def test_not_ready_while_the_backend_loads(serve, harmful: GameSeed) -> None:
    release = threading.Event()

    def slow_backend() -> RulesJudge:
        release.wait(10)
        return RulesJudge()

    url = serve(create_app(ServerSettings(), JudgeScorer(slow_backend))).url
    assert HTTP.get(f"{url}/health").status_code == 200
    loading = HTTP.get(f"{url}/ready")
    assert loading.status_code == 503 and "loading" in loading.json()["detail"]
    assert HTTP.post(f"{url}/v1/judge", json=wire([make_request(harmful, "")])).status_code == 503
    release.set()
    wait_until_ready(url)
    assert HTTP.post(f"{url}/v1/judge", json=wire([make_request(harmful, "")])).status_code == 200


def test_failed_backend_load_is_reported_by_ready(serve) -> None:
    def broken_backend() -> RulesJudge:
        raise OSError("no model at /models/missing")

    scorer = JudgeScorer(broken_backend)
    url = serve(create_app(ServerSettings(), scorer)).url
    for _ in range(200):
        if scorer.state.value != "loading":
            break
        threading.Event().wait(0.01)
    response = HTTP.get(f"{url}/ready")
    assert response.status_code == 503
    assert "failed: OSError: no model at /models/missing" in response.json()["detail"]
    assert HTTP.get(f"{url}/health").status_code == 200


# --- POST /judge: OpenRLHF's remote reward-model request -------------------------------------------------


def _prompt(note: str) -> str:
    """An assessor prompt as a ChatML template renders it, ending with the thinking prefix."""
    rendered = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in assessor_messages(note))
    return rendered + "<|im_start|>assistant\n" + THINKING_PREFIX


GOOD_ERROR = "The organism is wrong. </think> <answer>verdict: ERROR\nsentence: {sentence}</answer><|im_end|>"
GOOD_CLEAN = "Everything fits. </think> <answer>verdict: NO_ERROR</answer><|im_end|><|endoftext|>"
BROKEN = "verdict: ERROR"  # readable, but without the chain-of-thought tags


def test_openrlhf_rewards(url: str, harmful: GameSeed) -> None:
    prompt = _prompt(harmful.text)
    responses = [GOOD_ERROR.format(sentence=harmful.error_sentence), GOOD_CLEAN, GOOD_CLEAN, BROKEN]
    labels = ["error", "no_error", "error", "ERROR"]
    body = {"query": [prompt + r for r in responses], "prompts": [prompt] * 4, "labels": labels}
    response = HTTP.post(f"{url}/judge", json=body)
    assert response.status_code == 200, response.text
    out = response.json()
    # correctness +1/-1 plus format 0/-0.5: right, right, wrong, right with a broken format
    assert out["rewards"] == [1.0, 1.0, -1.0, 0.5]
    assert out["scores"] == out["rewards"]
    assert out["extra_logs"]["assessor_format_ok"] == [1.0, 1.0, 1.0, 0.0]
    assert out["extra_logs"]["assessor_correct"] == [1.0, 1.0, 0.0, 1.0]


def test_openrlhf_left_padding_and_missing_prompts(url: str, harmful: GameSeed) -> None:
    prompt = _prompt(harmful.text)
    padded = "<|endoftext|><|endoftext|>" + prompt + GOOD_CLEAN
    with_prompts = HTTP.post(f"{url}/judge", json={"query": [padded], "prompts": [prompt], "labels": ["no_error"]})
    without = HTTP.post(f"{url}/judge", json={"query": [padded], "labels": ["no_error"]})
    assert with_prompts.json()["rewards"] == without.json()["rewards"] == [1.0]


def test_openrlhf_localisation_bonus_from_json_label(serve, harmful: GameSeed) -> None:
    url = serve(rules_app(localisation_bonus=0.5)).url
    prompt = _prompt(harmful.text)
    label = json.dumps({"label": "error", "error_sentence": harmful.error_sentence})
    query = prompt + GOOD_ERROR.format(sentence=harmful.error_sentence)
    response = HTTP.post(f"{url}/judge", json={"query": [query], "prompts": [prompt], "labels": [label]})
    assert response.json()["rewards"] == [1.5]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"query": ["a", "b"], "labels": ["error"]}, "2 queries but 1 labels"),
        ({"query": ["p r"], "prompts": ["p", "q"], "labels": ["error"]}, "1 queries but 2 prompts"),
        ({"query": ["p r"], "prompts": ["p"], "labels": ["perhaps"]}, "labels[0] must be 'error', 'no_error'"),
        ({"query": ["p r"], "prompts": ["zzz"], "labels": ["error"]}, "query[0] does not contain prompts[0]"),
        ({"query": ["no prefix here"], "labels": ["error"]}, "query[0] has no prompt"),
        ({"query": [], "labels": []}, "at least 1 item"),
        ({"labels": ["error"]}, "body.query: Field required"),
    ],
)
def test_openrlhf_bad_requests_are_422(url: str, body: dict, message: str) -> None:
    response = HTTP.post(f"{url}/judge", json=body)
    assert response.status_code == 422
    assert message in response.json()["detail"]
