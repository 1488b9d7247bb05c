"""Evaluate a model as assessor on the MEDEC benchmark; write eval.json, eval.md, responses.jsonl and the run files."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from medical_team.common.errors import UserInputError
from medical_team.evaluate.baselines import baseline_scores
from medical_team.evaluate.benchmark import Benchmark, load_benchmark
from medical_team.evaluate.generation import GenerationSettings, generate_all
from medical_team.evaluate.gold import GoldNote
from medical_team.evaluate.official import REFERENCE_CSV, official_scores_of, write_reference
from medical_team.evaluate.predictions import NotePrediction, predict_from_response
from medical_team.evaluate.scoring import score_predictions
from medical_team.evaluate.submission import SUBMISSION_TXT, SubmissionSummary, write_submission
from medical_team.evaluate.summary import markdown_summary
from medical_team.game.batch import Generator
from medical_team.run_folder.benchmark_answers import RESPONSES_JSONL, generation_record, read_benchmark_answers

EVAL_JSON = "eval.json"
EVAL_MD = "eval.md"
# How the two sets of figures in eval.json are defined (docs/evaluation.md has the details).
DEFINITIONS = {
    "strict": "medplay's MEDIQA-CORR 2024 scores (top-level keys): an unreadable verdict or a quote matching no "
    "sentence is wrong on every score; corrections scored with rouge-score's ROUGE-1 F1",
    "official": "the shared task's published script on submission.txt and reference.csv, quirks included",
}


def evaluate(
    generator: Generator, benchmark: Benchmark, settings: GenerationSettings, about: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """Generate, parse and score every benchmark note; return the result dict and the raw responses."""
    started = time.perf_counter()
    responses = generate_all(generator, benchmark.prompts, settings.batch_size)
    seconds = time.perf_counter() - started
    generation = generation_record(
        settings.max_new_tokens, settings.batch_size, settings.native_thinking, "greedy", seconds, len(responses)
    )
    return scored_result(responses, benchmark, generation, about), responses


def scored_result(
    responses: Sequence[str], benchmark: Benchmark, generation: dict[str, Any], about: dict[str, Any]
) -> dict[str, Any]:
    """eval.json's content: each response parsed and scored against its note's ground truth (one per note, in order).

    `generation` says how the responses were made: here (`evaluate`) or by the trainer's validation
    (`score_validation_answers`).
    """
    predictions = [predict_from_response(text, gold) for text, gold in zip(responses, benchmark.golds, strict=True)]
    return {
        **about,
        "benchmark": benchmark.source,
        "benchmark_rows_skipped": benchmark.skipped,
        "generation": generation,
        "definitions": DEFINITIONS,
        **score_predictions(benchmark.golds, predictions),
        "official": official_scores_of(predictions, benchmark.golds),
        "baselines": baseline_scores(benchmark.golds),
        "predictions": [p.as_json() for p in predictions],
    }


def write_outputs(
    result: dict[str, Any], responses: list[str], golds: Sequence[GoldNote], output: Path
) -> SubmissionSummary:
    """Write eval.json, eval.md, one JSON line per response, the MEDIQA-CORR run file and its reference into `output`."""
    output.mkdir(parents=True, exist_ok=True)
    (output / EVAL_JSON).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (output / EVAL_MD).write_text(markdown_summary(result), encoding="utf-8")
    with (output / RESPONSES_JSONL).open("w", encoding="utf-8") as handle:
        for prediction, response in zip(result["predictions"], responses, strict=True):
            handle.write(
                json.dumps({"text_id": prediction["text_id"], "response": response}, ensure_ascii=False) + "\n"
            )
    write_reference(golds, output / REFERENCE_CSV)
    return write_submission([NotePrediction.from_json(p) for p in result["predictions"]], output / SUBMISSION_TXT)


def score_validation_answers(folder: Path) -> tuple[dict[str, Any], list[str], Benchmark]:
    """A training run's validation answers in `folder` (medical_team/run_folder/benchmark_answers.py), scored like `evaluate`.

    Returns eval.json's content, the responses and the notes answered (in benchmark order).
    """
    about, answers = read_benchmark_answers(folder)
    try:
        benchmark = load_benchmark(about["benchmark"]).only(answers)
    except ValueError as error:
        raise UserInputError(str(error), file=str(folder / RESPONSES_JSONL), field="text_id") from None
    responses = [answers[gold.text_id] for gold in benchmark.golds]
    meta = {key: about[key] for key in ("model", "backend", "step") if key in about}
    return scored_result(responses, benchmark, about.get("generation", {}), meta), responses, benchmark
