"""Run the assessor on plain notes (no ground truth): one prediction record per note and a summary.

The prompt (`game.prompts.assessor_messages`), the generation and the parser (`evaluate.predictions.read_response`)
are those of `medplay eval`; `medplay predict` (medical_team/cli/predict.py) calls this module.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from medical_team.data.plain_notes import PlainNote, PlainNotes
from medical_team.evaluate.generation import GenerationSettings, generate_all
from medical_team.evaluate.predictions import read_response
from medical_team.game.batch import Generator
from medical_team.game.prompts import assessor_messages
from medical_team.run_folder.benchmark_answers import generation_record

PREDICTIONS_JSONL = "predictions.jsonl"
PREDICT_SUMMARY_JSON = "predict_summary.json"

# A record's `verdict`: what the model answered, or UNREADABLE when its answer held no single readable verdict.
ERROR = "ERROR"
NO_ERROR = "NO_ERROR"
UNREADABLE = "UNREADABLE"
VERDICTS: tuple[str, ...] = (ERROR, NO_ERROR, UNREADABLE)
_VERDICT_OF_FLAG = {1: ERROR, 0: NO_ERROR, None: UNREADABLE}


def note_record(note: PlainNote, response: str) -> dict[str, Any]:
    """predictions.jsonl's line for one note: the parsed verdict, sentence and correction, and the raw response."""
    answer = read_response(response)
    return {
        "note_id": note.note_id,
        "verdict": _VERDICT_OF_FLAG[answer.flag],
        "sentence": answer.sentence,
        "correction": answer.correction,
        "error_type": answer.error_type,
        "format_violations": list(answer.format_violations),
        "response": response,
        "location": note.location,
        "columns": dict(note.columns),
    }


def predict_notes(
    generator: Generator, notes: Sequence[PlainNote], settings: GenerationSettings
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Assess every note (greedy, as `medplay eval`); return the records in input order and how they were made."""
    prompts = [assessor_messages(note.text) for note in notes]
    started = time.perf_counter()
    responses = generate_all(generator, prompts, settings.batch_size)
    seconds = time.perf_counter() - started
    generation = generation_record(
        settings.max_new_tokens, settings.batch_size, settings.native_thinking, "greedy", seconds, len(responses)
    )
    records = [note_record(note, response) for note, response in zip(notes, responses, strict=True)]
    return records, generation


def predict_summary(
    read: PlainNotes, records: Sequence[dict[str, Any]], generation: dict[str, Any], about: dict[str, Any]
) -> dict[str, Any]:
    """predict_summary.json's content: what was read, what was skipped and why, the verdict counts, the timing."""
    verdicts = Counter(record["verdict"] for record in records)
    return {
        **about,
        "notes_read": len(read.notes),
        "skipped": [{**asdict(bad), "message": bad.describe()} for bad in read.skipped],
        "ignored": list(read.ignored),
        "verdicts": {verdict: verdicts.get(verdict, 0) for verdict in VERDICTS},
        "format_violations": sum(1 for record in records if record["format_violations"]),
        "generation": generation,
    }


def write_predictions(records: Sequence[dict[str, Any]], summary: dict[str, Any], output: Path) -> None:
    """Write predictions.jsonl (one line per note, input order) and predict_summary.json into `output`."""
    output.mkdir(parents=True, exist_ok=True)
    with (output / PREDICTIONS_JSONL).open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    (output / PREDICT_SUMMARY_JSON).write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", "utf-8")


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """The summary as printed: counts, every skipped row with its reason, the timing."""
    verdicts = summary["verdicts"]
    counts = ", ".join(f"{verdict} {verdicts[verdict]}" for verdict in VERDICTS)
    read = summary["notes_read"]
    return [
        f"notes read: {read}; skipped: {len(summary['skipped'])}; ignored (no note in them): {len(summary['ignored'])}",
        *(f"  skipped {bad['message']}" for bad in summary["skipped"]),
        *(f"  ignored {what}" for what in summary["ignored"]),
        f"verdicts: {counts}; answers with format violations: {summary['format_violations']}",
        f"seconds: {summary['generation']['seconds']:.1f} generating, {summary['load_seconds']:.1f} loading the model",
    ]
