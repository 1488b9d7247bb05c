"""The verl reward adapter: the assessor's reward on the seed note, identical to the judge server's OpenRLHF endpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from medical_team.agent_loop.reward_fn import compute_score
from medical_team.common.vocab import BENCHMARK_DATA_SOURCE, DATA_SOURCE, Label
from medical_team.data.medec import load_medec
from medical_team.data.records import GameSeed
from medical_team.data.seeds import build_seeds
from medical_team.game import RewardConfig
from medical_team.game.dataset import benchmark_row, game_row
from medical_team.game.prompts import assessor_messages, with_thinking_prefix
from medical_team.judge.rules import RulesJudge
from medical_team.judge.scorer import JudgeScorer
from medical_team.judge_server.app import ServerSettings, create_app
from medical_team.judge_server.serving import BackgroundServer

BONUS = 0.5


def answer(body: str, reasoning: str = "I compared each statement with the findings.") -> str:
    return f"{reasoning} </think> <answer> {body} </answer>"


def responses_for(seed: GameSeed) -> list[str]:
    """Recorded assessor responses covering every reward term: right/wrong, localisation, format violations."""
    sentence = seed.error_sentence or "The patient is stable."
    return [
        answer(f"verdict: ERROR\nsentence: {sentence}\nerror_type: {seed.error_type}\ncorrection: fixed"),
        answer("verdict: ERROR\nsentence: Vital signs are within normal limits."),
        answer("verdict: NO_ERROR"),
        "verdict: NO_ERROR without any tags",
        answer("verdict: maybe"),
        answer("verdict: ERROR") + " trailing words",
        "<think> again " + answer("verdict: NO_ERROR"),
    ]


@pytest.fixture(scope="module")
def recorded_games(medec_csv: Path) -> list[tuple[dict[str, Any], str]]:
    """(game row, assessor response) pairs for seeds of both labels."""
    seeds = build_seeds(load_medec(medec_csv).notes, seed=0)
    chosen = [s for s in seeds if s.label is Label.ERROR][:3] + [s for s in seeds if s.label is Label.NO_ERROR][:3]
    return [
        (game_row(seed, index=i, split="val"), response)
        for i, seed in enumerate(chosen)
        for response in responses_for(seed)
    ]


@pytest.fixture(scope="module")
def judge_server() -> str:
    """The judge server on a loopback port (rules backend), scoring with the same localisation bonus."""
    scorer = JudgeScorer(RulesJudge, rewards=RewardConfig(localisation_bonus=BONUS))
    scorer.load()
    with BackgroundServer(create_app(ServerSettings(port=0), scorer)) as server:
        yield server.url


def openrlhf_label(row: dict[str, Any]) -> str:
    """The label OpenRLHF sends for a row: the truth and, for error notes, the known error sentence."""
    info = row["extra_info"]
    sentence = info["error_sentence"] if info["label"] == Label.ERROR.value else None
    return json.dumps({"label": info["label"], "error_sentence": sentence})


def test_verl_adapter_and_openrlhf_endpoint_give_identical_rewards(
    recorded_games: list[tuple[dict[str, Any], str]], judge_server: str, tiny_model_dir: Path
) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    prompts = [
        with_thinking_prefix(
            tokenizer.apply_chat_template(
                assessor_messages(row["extra_info"]["text"]), add_generation_prompt=True, tokenize=False
            )
        )
        for row, _ in recorded_games
    ]
    body = {
        "query": [prompt + response for prompt, (_, response) in zip(prompts, recorded_games, strict=True)],
        "prompts": prompts,
        "labels": [openrlhf_label(row) for row, _ in recorded_games],
    }
    reply = httpx.post(f"{judge_server}/judge", json=body, timeout=30.0)
    assert reply.status_code == 200, reply.text
    server_rewards = reply.json()["rewards"]

    verl_rewards = [
        compute_score(
            row["data_source"],
            response,
            row["reward_model"]["ground_truth"],
            row["extra_info"],
            localisation_bonus=BONUS,
        )["score"]
        for row, response in recorded_games
    ]
    assert verl_rewards == server_rewards
    # the recorded games exercise every term: +-1 correctness, 0/-0.5 format, the localisation bonus
    assert {1.5, 1.0, 0.5, -1.0, -1.5} <= set(verl_rewards)


def test_every_row_reports_the_same_keys(recorded_games: list[tuple[dict[str, Any], str]]) -> None:
    results = [
        compute_score(row["data_source"], response, row["reward_model"]["ground_truth"], row["extra_info"])
        for row, response in recorded_games
    ]
    assert {tuple(sorted(r)) for r in results} == {("acc", "format_ok", "score", "sentence_match")}
    assert any(r["acc"] == 1.0 for r in results) and any(r["acc"] == 0.0 for r in results)


def test_benchmark_rows_are_scored_on_their_ground_truth(medec_csv: Path) -> None:
    note = next(n for n in load_medec(medec_csv).notes if n.error_flag)
    row = benchmark_row(note, index=0)
    right = answer(f"verdict: ERROR\nsentence: {note.error_sentence}")
    result = compute_score(
        BENCHMARK_DATA_SOURCE, right, row["reward_model"]["ground_truth"], row["extra_info"], localisation_bonus=BONUS
    )
    assert result == {"score": 1.5, "acc": 1.0, "format_ok": 1.0, "sentence_match": 1.0}


def test_a_ground_truth_that_contradicts_the_seed_is_refused(recorded_games: list[tuple[dict[str, Any], str]]) -> None:
    row, response = recorded_games[0]
    with pytest.raises(ValueError, match="contradicts extra_info label"):
        compute_score(DATA_SOURCE, response, Label.NO_ERROR.value, row["extra_info"])


def test_a_row_without_seed_fields_names_what_is_missing() -> None:
    with pytest.raises(ValueError, match="lacks .*benign_mode"):
        compute_score(DATA_SOURCE, answer("verdict: ERROR"), "error", {"note_id": "x"})
