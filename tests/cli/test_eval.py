"""`medplay eval` end to end: a real tiny model on the full benchmark, scores recomputed from its predictions."""

import csv
import json
import re
from statistics import fmean

import pytest
from mediqa_corr_2024 import as_eval_json, official_part, score
from recomputed_scores import recompute

from medical_team.cli import main

BASELINES = {
    "always_correct": (0.479, 0.479),
    "always_error_last_sentence": (0.521, 0.387),
}


@pytest.fixture(scope="module")
def full_run(tiny_model_dir, tmp_path_factory):
    """One `medplay eval` of the tiny model on all 597 notes (short generations keep it to a minute or two)."""
    output = tmp_path_factory.mktemp("eval")
    argv = [
        "eval",
        "--model",
        str(tiny_model_dir),
        "--output",
        str(output),
        "--max-new-tokens",
        "3",
        "--batch-size",
        "32",
    ]
    assert main(argv) == 0
    return output


def test_full_benchmark_writes_one_prediction_per_note(full_run, test_notes):
    result = json.loads((full_run / "eval.json").read_text())
    assert result["notes"] == len(test_notes) == 597
    assert [p["text_id"] for p in result["predictions"]] == [n.text_id for n in test_notes]
    for prediction in result["predictions"]:
        assert {"text_id", "flag", "sentence_id", "correction"} <= set(prediction)
    assert result["backend"] == "transformers"
    assert result["load_seconds"] >= 0 and result["generation"]["seconds"] > 0  # loading is timed apart
    assert len((full_run / "responses.jsonl").read_text().splitlines()) == 597


def test_submission_file_has_one_scorer_readable_line_per_note(full_run, test_notes):
    lines = (full_run / "submission.txt").read_text(encoding="utf-8").splitlines()
    assert [line.split()[0] for line in lines] == [n.text_id for n in test_notes]
    assert all(re.fullmatch(r"[a-z0-9\-]+\s[0-9]+\s\-?[0-9]+\s.+", line) for line in lines)


def test_scores_match_a_recomputation_from_the_predictions(full_run, test_notes):
    result = json.loads((full_run / "eval.json").read_text())
    for key, value in recompute(result["predictions"], test_notes).items():
        assert result[key] == pytest.approx(value), key
    violations = fmean(p["format_violation"] for p in result["predictions"])
    assert result["format_violation_rate"] == pytest.approx(violations)


def test_baselines_are_the_published_figures(full_run):
    result = json.loads((full_run / "eval.json").read_text())
    for name, (flag, sentence) in BASELINES.items():
        assert round(result["baselines"][name]["error_flag_accuracy"], 3) == flag
        assert round(result["baselines"][name]["error_sentence_accuracy"], 3) == sentence


def test_official_block_is_the_official_scripts_figures_on_the_written_files(full_run):
    result = json.loads((full_run / "eval.json").read_text())
    script = score(full_run / "submission.txt", full_run / "reference.csv")
    assert official_part(result["official"]) == as_eval_json(script)
    assert script["counters"]["total_texts"] == 597 and set(result["definitions"]) == {"strict", "official"}


def test_summary_page_and_console_show_baselines_beside_the_model(full_run, capsys):
    page = (full_run / "eval.md").read_text()
    assert "| model (strict) |" in page and "| model (official script) |" in page
    assert "| always correct (strict) | 0.479 | 0.479 | 0.479 |" in page
    assert "| always correct (official script) | 0.479 | 0.479 | 0.479 |" in page
    assert "| always error last sentence (strict) | 0.521 | 0.387 | 0.269 |" in page
    assert "| always error last sentence (official script) | 0.521 | 0.387 | 0.267 |" in page
    assert "## Per error type" in page and "| diagnosis | 116 |" in page


def test_converted_benchmark_parquet_with_limit(tiny_model_dir, tmp_path, test_notes):
    assert main(["convert", "--output", str(tmp_path / "data")]) == 0
    output = tmp_path / "eval"
    argv = ["eval", "--model", str(tiny_model_dir), "--output", str(output), "--max-new-tokens", "2", "--limit", "5"]
    assert main([*argv, "--benchmark", str(tmp_path / "data" / "benchmark.parquet")]) == 0
    result = json.loads((output / "eval.json").read_text())
    assert [p["text_id"] for p in result["predictions"]] == [n.text_id for n in test_notes[:5]]
    for key, value in recompute(result["predictions"], test_notes[:5]).items():
        assert result[key] == pytest.approx(value)


def test_limit_writes_the_reference_of_the_scored_notes_only(tiny_model_dir, tmp_path, test_notes):
    output = tmp_path / "eval"
    argv = ["eval", "--model", str(tiny_model_dir), "--output", str(output), "--max-new-tokens", "2", "--limit", "50"]
    assert main(argv) == 0
    with (output / "reference.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))[1:]
    assert [row[0] for row in rows] == [n.text_id for n in test_notes[:50]]
    result = json.loads((output / "eval.json").read_text())
    script = score(output / "submission.txt", output / "reference.csv")
    assert official_part(result["official"]) == as_eval_json(script)
    assert script["counters"]["total_texts"] == 50


def test_verl_checkpoint_folder_with_hf_export_is_accepted(tiny_model_dir, tmp_path):
    import shutil

    root = tmp_path / "checkpoints"
    shutil.copytree(tiny_model_dir, root / "global_step_4" / "actor" / "huggingface")
    (root / "latest_checkpointed_iteration.txt").write_text("4")
    output = tmp_path / "eval"
    argv = ["eval", "--model", str(root), "--output", str(output), "--max-new-tokens", "2", "--limit", "2"]
    assert main(argv) == 0
    result = json.loads((output / "eval.json").read_text())
    assert result["resolved_model"] == str(root / "global_step_4" / "actor" / "huggingface")
