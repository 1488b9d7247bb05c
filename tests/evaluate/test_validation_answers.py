"""`medplay eval --responses`: the answers a trainer's validation wrote, scored exactly as `medplay eval` scores a model's.

The trainer's own writer (medical_team/run_folder/benchmark_answers.py) writes the answers as the workers
hand them over (any order, a second answer of a note when `val_kwargs.n` > 1); the scripted assessor of
test_evaluation_pipeline.py gives the same answers to `evaluate`, and both eval.json files must agree.
"""

import json

import pytest
from test_evaluation_pipeline import ScriptedAssessor

from medical_team.cli import main
from medical_team.common.errors import UserInputError
from medical_team.evaluate.benchmark import load_benchmark
from medical_team.evaluate.evaluation import evaluate, score_validation_answers
from medical_team.evaluate.generation import GenerationSettings
from medical_team.run_folder.benchmark_answers import RESPONSES_JSONL, write_benchmark_answers

NOTES = 60  # the first notes of MEDEC-MS test: a benchmark of `medplay convert --benchmark-notes 60`


@pytest.fixture(scope="module")
def both(test_notes, tmp_path_factory):
    """The same answers scored by `medplay eval` (a generator) and by `medplay eval --responses` (the trainer's files)."""
    benchmark = load_benchmark(None).head(NOTES)
    result, responses = evaluate(
        ScriptedAssessor(test_notes), benchmark, GenerationSettings(max_new_tokens=64), {"model": "m", "backend": "x"}
    )
    answers = [{"text_id": g.text_id, "response": r} for g, r in zip(benchmark.golds, responses, strict=True)]
    answers = answers[::-1] + [{"text_id": answers[0]["text_id"], "response": "a second sample, not scored"}]
    generation = {"max_new_tokens": 64, "batch_size": None, "native_thinking": False, "decoding": "greedy"}
    about = {"benchmark": benchmark.source, "model": "m, trained 3 steps", "backend": "verl validation", "step": 3}
    folder = write_benchmark_answers(answers, tmp_path_factory.mktemp("validation") / "step_3", {
        **about, "generation": generation
    })  # fmt: skip
    assert main(["eval", "--responses", str(folder), "--output", str(folder)]) == 0
    return result, json.loads((folder / "eval.json").read_text()), folder


def test_the_trainers_answers_score_as_the_models_answers(both):
    direct, from_files, _ = both
    assert from_files["predictions"] == direct["predictions"]
    assert from_files["notes"] == NOTES
    for key in ("error_flag_accuracy", "error_sentence_accuracy", "format_violation_rate", "confusion", "official"):
        assert from_files[key] == direct[key], key
    assert (from_files["model"], from_files["backend"], from_files["step"]) == (
        "m, trained 3 steps",
        "verl validation",
        3,
    )
    assert from_files["generation"]["decoding"] == "greedy"


def test_the_folder_holds_every_file_of_an_eval(both):
    _, _, folder = both
    names = {path.name for path in folder.iterdir()}
    assert names >= {"eval.json", "eval.md", "responses.jsonl", "submission.txt", "reference.csv", "validation.json"}
    lines = (folder / RESPONSES_JSONL).read_text().splitlines()
    assert len(lines) == NOTES  # in benchmark order now, one per note
    assert "verl validation, greedy, at most 64 new tokens" in (folder / "eval.md").read_text()


def test_a_broken_answer_line_is_named_with_its_file_and_row(both, tmp_path):
    _, _, folder = both
    (tmp_path / "validation.json").write_text((folder / "validation.json").read_text())
    (tmp_path / RESPONSES_JSONL).write_text('{"text_id": "ms-test-0", "response": "x"}\n{"text_id": 1\n')
    with pytest.raises(UserInputError) as raised:
        score_validation_answers(tmp_path)
    assert RESPONSES_JSONL in str(raised.value) and "row 2" in str(raised.value)


def test_an_answer_to_a_note_outside_the_benchmark_is_refused(both, tmp_path):
    _, _, folder = both
    (tmp_path / "validation.json").write_text((folder / "validation.json").read_text())
    (tmp_path / RESPONSES_JSONL).write_text('{"text_id": "no-such-note", "response": "x"}\n')
    with pytest.raises(UserInputError, match="no-such-note"):
        score_validation_answers(tmp_path)
