"""The evaluation pipeline on all 597 notes with varied answers: parse -> score -> eval.json agree with a recount.

A scripted assessor stands in for the language model here (the model path is covered by test_eval_cli);
what is under test is everything after generation.
"""

import json
from collections import Counter
from statistics import fmean

import pytest
from recomputed_scores import recompute

from medical_team.evaluate.benchmark import load_benchmark
from medical_team.evaluate.evaluation import evaluate, write_outputs
from medical_team.evaluate.generation import GenerationSettings


class ScriptedAssessor:
    """Answers each note in one of five ways, chosen by its position: exact, last sentence, clean, garbage, misquote."""

    def __init__(self, notes):
        self.by_text = {note.text: note for note in notes}
        self.seen = 0

    def answer(self, note, kind: int) -> str:
        if kind == 0 and note.error_flag:
            body = f'verdict: ERROR\nsentence: "{note.error_sentence}"\ncorrection: {note.corrected_sentence}'
        elif kind in (0, 1):
            body = f"verdict: ERROR\nsentence: {note.sentences[-1]}\nerror_type: diagnosis\ncorrection: {note.sentences[-1]}"
        elif kind == 2:
            body = "verdict: NO_ERROR"
        elif kind == 3:
            return "I cannot decide."
        else:
            body = "verdict: ERROR\nsentence: The moon is made of cheese.\ncorrection: It is not."
        return f"Reading the note. </think> <answer>\n{body}\n</answer>"

    def generate(self, prompts):
        out = []
        for messages in prompts:
            text = messages[-1]["content"].split("Clinical note:\n", 1)[1]
            out.append(self.answer(self.by_text[text], self.seen % 5))
            self.seen += 1
        return out


@pytest.fixture(scope="module")
def result_dir(test_notes, tmp_path_factory):
    benchmark = load_benchmark(None)
    settings = GenerationSettings(max_new_tokens=64, batch_size=50)
    result, responses = evaluate(
        ScriptedAssessor(test_notes), benchmark, settings, {"model": "scripted", "backend": "x"}
    )
    output = tmp_path_factory.mktemp("pipeline")
    write_outputs(result, responses, benchmark.golds, output)
    return output


def test_scores_match_a_recount(result_dir, test_notes):
    result = json.loads((result_dir / "eval.json").read_text())
    recount = recompute(result["predictions"], test_notes)
    for key, value in recount.items():
        assert result[key] == pytest.approx(value), key
    assert 0.2 < result["error_flag_accuracy"] < 0.8  # the answers really are mixed
    assert result["format_violation_rate"] == pytest.approx(fmean(i % 5 == 3 for i in range(597)))


def test_kinds_of_answer_land_where_they_should(result_dir, test_notes):
    predictions = json.loads((result_dir / "eval.json").read_text())["predictions"]
    for index, (prediction, note) in enumerate(zip(predictions, test_notes, strict=True)):
        kind = index % 5
        if kind == 0 and note.error_flag:
            assert prediction["sentence_id"] == note.error_sentence_id
        elif kind in (0, 1):
            assert prediction["sentence_id"] == len(note.sentences) - 1
        elif kind == 2:
            assert (prediction["flag"], prediction["sentence_id"]) == (0, -1)
        elif kind == 3:
            assert prediction["flag"] is None
        else:
            assert (prediction["flag"], prediction["sentence_id"]) == (1, None)


def test_per_error_type_and_positions_are_consistent(result_dir, test_notes):
    result = json.loads((result_dir / "eval.json").read_text())
    assert sum(group["notes"] for group in result["per_error_type"].values()) == 311
    assert Counter(n.error_type for n in test_notes if n.error_flag) == {
        name: group["notes"] for name, group in result["per_error_type"].items()
    }
    predicted = result["positions"]["predicted"]
    flagged = [p for p in result["predictions"] if p["flag"] == 1]
    assert predicted["count"] + predicted["unresolved_sentences"] == len(flagged)
    assert sum(predicted["relative_position_histogram"]) == predicted["count"]
    # docs/evaluation.md: the error sentence is the last one in 74 % of the test file's error notes.
    assert round(result["positions"]["reference"]["last_sentence_rate"], 2) == 0.74
