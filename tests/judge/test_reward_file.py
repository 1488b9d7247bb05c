"""The OpenRLHF reward file, loaded by path as OpenRLHF loads it, gives the judge server's `POST /judge` rewards."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from judge_helpers import HTTP, rules_app

from medical_team.cli import main
from medical_team.data.medec import bundled_csv, load_medec
from medical_team.data.seeds import benign_seed, harmful_seed
from medical_team.game.prompts import THINKING_PREFIX, assessor_messages

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "openrlhf" / "assessor_responses.jsonl"
BONUS = 0.5


def _chatml_prompt(note: str) -> str:
    """An assessor prompt as a ChatML template renders it, ending with the thinking prefix."""
    rendered = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in assessor_messages(note))
    return rendered + "<|im_start|>assistant\n" + THINKING_PREFIX


@pytest.fixture(scope="module")
def recorded() -> tuple[list[str], list[str], list[str]]:
    """(queries, prompts, labels) of the recorded responses; every third query is left-padded as a batch decode."""
    notes = {
        n.text_id: n for n in load_medec(bundled_csv("MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv")).notes
    }
    queries, prompts, labels = [], [], []
    for i, line in enumerate(CORPUS.read_text(encoding="utf-8").splitlines()):
        record = json.loads(line)
        note = notes[record["note_id"]]
        seed = harmful_seed(note) if record["seed"] == "harmful" else benign_seed(note)
        prompt = _chatml_prompt(seed.text)
        queries.append(("<|endoftext|>" * 3 if i % 3 == 0 else "") + prompt + record["response"])
        prompts.append(prompt)
        labels.append(record["label"])
    return queries, prompts, labels


def _load_like_openrlhf(path: Path):
    """What OpenRLHF does with `--remote_rm_url path.py`."""
    spec = importlib.util.spec_from_file_location("reward_func", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.reward_func


def test_reward_file_matches_the_server_on_recorded_responses(tmp_path, monkeypatch, serve, recorded):
    path = tmp_path / "medplay_reward.py"
    assert main(["judge", "reward-file", "--output", str(path)]) == 0
    monkeypatch.setenv("MEDPLAY_LOCALISATION_BONUS", str(BONUS))
    reward_func = _load_like_openrlhf(path)
    queries, prompts, labels = recorded
    assert len(queries) >= 40

    local = reward_func(queries, prompts, labels)
    server = serve(rules_app(max_body_bytes=8 * 1024 * 1024, max_batch=64, localisation_bonus=BONUS))
    response = HTTP.post(f"{server.url}/judge", json={"query": queries, "prompts": prompts, "labels": labels})
    assert response.status_code == 200, response.text
    remote = response.json()

    assert local["rewards"].tolist() == remote["rewards"]
    assert local["scores"].tolist() == remote["scores"]
    assert {k: v.tolist() for k, v in local["extra_logs"].items()} == remote["extra_logs"]
    # the corpus exercises every reward level: format and correctness both ways, and the localisation bonus
    assert {-1.5, -1.0, 0.5, 1.0, 1.0 + BONUS} <= set(remote["rewards"])


def test_reward_file_without_output_names_the_installed_file(capsys):
    assert main(["judge", "reward-file"]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert path.is_file() and "def reward_func(" in path.read_text()


def test_reward_file_output_must_be_a_python_file(tmp_path, capsys):
    assert main(["judge", "reward-file", "--output", str(tmp_path / "reward.txt")]) == 2
    assert "must end in .py" in capsys.readouterr().err
