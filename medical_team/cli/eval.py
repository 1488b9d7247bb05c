"""`medplay eval --model PATH --output DIR`: score a model as assessor on the MEDEC benchmark (MEDIQA-CORR 2024)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from medical_team.errors import UserInputError


def _positive(flag: str, value: int | None) -> None:
    """Reject a count below 1, naming the option."""
    if value is not None and value < 1:
        raise UserInputError(f"must be at least 1, got {value}", field=flag)


def run(args: argparse.Namespace) -> int:
    """Load the benchmark and the model, generate, score, write DIR/eval.json and DIR/eval.md, print the comparison."""
    for flag, value in (
        ("--limit", args.limit),
        ("--batch-size", args.batch_size),
        ("--max-new-tokens", args.max_new_tokens),
    ):
        _positive(flag, value)
    from medical_team.evaluate.benchmark import load_benchmark
    from medical_team.evaluate.evaluation import EVAL_JSON, EVAL_MD, evaluate, write_outputs
    from medical_team.evaluate.generation import GenerationSettings, choose_backend, make_generator
    from medical_team.evaluate.model_source import resolve_model
    from medical_team.evaluate.submission import SUBMISSION_TXT, submission_note
    from medical_team.evaluate.summary import console_table

    benchmark = load_benchmark(args.benchmark).head(args.limit)
    for reason, count in benchmark.skipped.items():
        print(f"benchmark: skipped {count} rows: {reason}")
    model = resolve_model(args.model)
    backend = choose_backend(args.backend)
    settings = GenerationSettings(args.max_new_tokens, args.batch_size, args.native_thinking)
    print(f"evaluating {model} with {backend} on {len(benchmark.golds)} notes of {benchmark.source}")
    started = time.perf_counter()
    try:
        generator = make_generator(model, backend, settings)
    except (OSError, ValueError) as error:
        reason = " ".join(str(error).split())
        raise UserInputError(
            f"cannot load the model locally (nothing is downloaded; pass a model folder or a hub id already "
            f"in the HF cache): {reason}",
            file=str(model),
            field="--model",
        ) from None
    load_seconds = round(time.perf_counter() - started, 1)  # vLLM's engine start; not in generation.seconds
    about = {"model": str(args.model), "resolved_model": str(model), "backend": backend, "load_seconds": load_seconds}
    result, responses = evaluate(generator, benchmark, settings, about)
    output = Path(args.output)
    submission = write_outputs(result, responses, output)
    print(console_table(result))
    print(
        f"format violation rate {result['format_violation_rate']:.3f}; wrote {output / EVAL_JSON} and {output / EVAL_MD}"
    )
    print(submission_note(submission, output / SUBMISSION_TXT))
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay eval`."""
    parser = subparsers.add_parser(
        "eval",
        help="score a model as assessor on the MEDEC benchmark",
        description="Write DIR/eval.json, DIR/eval.md, DIR/responses.jsonl and DIR/submission.txt (MEDIQA-CORR run "
        "format). Nothing is downloaded.",
    )
    parser.add_argument(
        "--model", required=True, help="HF model folder, verl checkpoint folder (with an HF export), or cached hub id"
    )
    parser.add_argument(
        "--output", required=True, help="directory for eval.json, eval.md, responses.jsonl and submission.txt"
    )
    parser.add_argument(
        "--benchmark", help="benchmark.parquet from `medplay convert`, or a MEDEC CSV (default: bundled MEDEC-MS test)"
    )
    parser.add_argument("--limit", type=int, help="evaluate only the first N notes")
    parser.add_argument(
        "--batch-size",
        type=int,
        default=16,
        help="prompts per transformers generate call (default 16); vLLM batches all prompts itself",
    )
    parser.add_argument("--max-new-tokens", type=int, default=1024, help="response length cap (default 1024)")
    parser.add_argument(
        "--backend",
        choices=("auto", "vllm", "transformers"),
        default="auto",
        help="auto: vLLM when installed and a GPU is present, else transformers",
    )
    parser.add_argument(
        "--native-thinking", action="store_true", help="use the chat template's thinking mode (Qwen3) for the prompt"
    )
    parser.set_defaults(run=run)
