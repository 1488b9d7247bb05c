"""The `hf` backend with a tiny random model built at test time, in-process and behind the judge server."""

from __future__ import annotations

from pathlib import Path

import pytest
from judge_helpers import HTTP, make_request, reworded, wait_until_ready, wire

from medical_team.data.records import GameSeed
from medical_team.judge.backends import build_judge
from medical_team.judge.hf_backend import HFChatCompleter
from medical_team.judge.model_judge import ModelJudge
from medical_team.judge.prompt import judge_messages
from medical_team.judge.scorer import JudgeScorer
from medical_team.judge.settings import packaged_judge_settings
from medical_team.judge_server.app import ServerSettings, create_app
from medical_team.models.tiny import TinyModelSpec, build_tiny_model

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def hf_judge(tmp_path_factory: pytest.TempPathFactory) -> ModelJudge:
    """The hf backend as `build_judge` makes it, on a tiny random model saved for this module."""
    folder = build_tiny_model(tmp_path_factory.mktemp("tiny-judge"), TinyModelSpec(architecture="qwen2"))
    settings = packaged_judge_settings(backend="hf", model=str(folder), batch_size=2, serve={"max_tokens": 6})
    judge = build_judge(settings)
    assert isinstance(judge, ModelJudge) and isinstance(judge.completer, HFChatCompleter)
    return judge


def test_batched_generation_answers_every_conversation(hf_judge: ModelJudge, harmful: GameSeed) -> None:
    completer = hf_judge.completer
    conversations = [judge_messages(make_request(harmful, reworded(harmful, " " * i))) for i in range(3)]
    rendered = completer.render(conversations[0])
    assert harmful.text in rendered and rendered.endswith("<|im_start|>assistant\n")
    outputs = completer.complete(conversations)
    assert len(outputs) == 3 and all(isinstance(text, str) for text in outputs)


def test_random_model_output_becomes_parse_error_ties(hf_judge: ModelJudge, seed_pairs) -> None:
    judge = ModelJudge(hf_judge.completer, batch_size=2)  # fresh counters
    harmful, benign = seed_pairs[6]
    requests = [
        make_request(harmful, reworded(harmful)),
        make_request(benign, reworded(benign)),
        make_request(benign, reworded(benign, " More.")),
        make_request(harmful, harmful.text),  # a copy: settled by a rule, no generation
    ]
    verdicts = judge.judge(requests)
    assert [v.tie for v in verdicts] == [True, True, True, False]
    assert all(v.parse_error for v in verdicts[:3])
    assert verdicts[3].reason == "rule:identical_to_seed"
    metrics = judge.stats.metrics()
    assert metrics["judge/calls"] == 4 and metrics["judge/parse_error_rate"] == 0.75
    assert judge.stats.model_calls == 3


def test_server_with_hf_backend(serve, hf_judge: ModelJudge, harmful: GameSeed) -> None:
    url = serve(create_app(ServerSettings(), JudgeScorer(lambda: hf_judge))).url
    wait_until_ready(url)
    response = HTTP.post(f"{url}/v1/judge", json=wire([make_request(harmful, reworded(harmful))]), timeout=60)
    assert response.status_code == 200
    verdict = response.json()["verdicts"][0]
    assert verdict["tie"] is True and verdict["parse_error"] is True


def test_missing_local_model_is_a_clean_error(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        HFChatCompleter("no-such-org/no-such-model", local_files_only=True)


def test_device_failure_becomes_counted_ties(hf_judge: ModelJudge, harmful: GameSeed) -> None:
    completer = HFChatCompleter(hf_judge.completer.name, device="meta", max_new_tokens=2)  # no data: generate fails
    judge = ModelJudge(completer, max_consecutive_failures=None)
    verdict = judge.judge([make_request(harmful, reworded(harmful))])[0]
    assert verdict.tie and not verdict.parse_error and "unavailable" in verdict.reason
    assert judge.stats.failed_batches == 1
