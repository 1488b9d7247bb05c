"""`medplay predict --model DIR --input FILE --output DIR`: run the assessor on your own notes (no ground truth).

medplay predict --model build/export --input notes.csv --output build/predict
medplay predict --model build/export --input notes/ --output build/predict --on-bad-row skip   # a folder of .txt
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from medical_team.cli.generation_options import add_generation_options, generation_settings, load_error
from medical_team.common.errors import UserInputError


def run(args: argparse.Namespace) -> int:
    """Read the notes, load the model, assess every note, write DIR/predictions.jsonl and DIR/predict_summary.json."""
    settings = generation_settings(args)
    output = Path(args.output)
    if output.exists() and not output.is_dir():
        raise UserInputError("exists and is not a directory", file=str(output), field="--output")
    from medical_team.data.plain_notes import read_plain_notes

    notes = read_plain_notes(
        Path(args.input),
        id_field=args.id_column,
        text_field=args.text_column,
        on_bad_row=args.on_bad_row,
        encoding=args.encoding,
    )
    found = notes.columns.found_line(Path(args.input).name) if notes.columns else None
    if found:
        print(found)
    for bad in notes.skipped:
        print(f"skipped {bad.describe()}")

    from medical_team.evaluate.generation import choose_backend, make_generator
    from medical_team.evaluate.model_source import resolve_model
    from medical_team.evaluate.predict import (
        PREDICT_SUMMARY_JSON,
        PREDICTIONS_JSONL,
        predict_notes,
        predict_summary,
        summary_lines,
        write_predictions,
    )

    model = resolve_model(args.model)
    backend = choose_backend(args.backend)
    print(f"assessing {len(notes.notes)} notes of {args.input} with {model} ({backend})")
    started = time.perf_counter()
    try:
        generator = make_generator(model, backend, settings)
    except (OSError, ValueError) as error:
        raise load_error(error, model, "--model") from None
    load_seconds = round(time.perf_counter() - started, 1)
    records, generation = predict_notes(generator, notes.notes, settings)
    about = {
        "input": str(args.input),
        "model": str(args.model),
        "resolved_model": str(model),
        "backend": backend,
        "load_seconds": load_seconds,
    }
    summary = predict_summary(notes, records, generation, about)
    write_predictions(records, summary, output)
    for line in summary_lines(summary):
        print(line)
    print(f"wrote {output / PREDICTIONS_JSONL} ({len(records)} notes) and {output / PREDICT_SUMMARY_JSON}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay predict`."""
    parser = subparsers.add_parser(
        "predict",
        help="run a model as assessor on your own notes (CSV, JSONL or a folder of .txt files); no ground truth",
        description="Write DIR/predictions.jsonl (one line per note, in input order: note_id, verdict, sentence, "
        "correction, error_type, format_violations, response, location) and DIR/predict_summary.json. Same prompt, "
        "greedy decoding and parser as `medplay eval`. Nothing is downloaded. Not for clinical decisions.",
    )
    parser.add_argument(
        "--model",
        required=True,
        help="HF model folder (e.g. `medplay export`'s output), verl checkpoint folder "
        "(with an HF export), or cached hub id",
    )
    parser.add_argument(
        "--input",
        required=True,
        help="a .csv file with a header, a .jsonl file (one JSON object per line), or a folder of .txt files "
        "(one note per file, id = file name without .txt)",
    )
    parser.add_argument("--output", required=True, help="directory for predictions.jsonl and predict_summary.json")
    parser.add_argument(
        "--id-column",
        help="CSV column / JSON field holding the note id (default: note_id, else id; said on the console)",
    )
    parser.add_argument(
        "--text-column",
        help="CSV column / JSON field holding the note text (default: note, else text; said on the console)",
    )
    parser.add_argument(
        "--on-bad-row",
        choices=("refuse", "skip"),
        default="refuse",
        help="a row with no id, an empty text, a repeated id or undecodable bytes: refuse the input, listing every "
        "such row (default), or skip them and list them in the summary",
    )
    parser.add_argument("--encoding", default="utf-8", help="text encoding of the input (default utf-8)")
    add_generation_options(parser)
    parser.set_defaults(run=run)
