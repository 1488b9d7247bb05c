"""The folder a training run's validation on the benchmark writes per step, and `medplay eval --responses` reads.

`<medplay.validation_dir>/step_<N>/` holds `responses.jsonl` (one `{"text_id", "response"}` line per note, the
lines of `medplay eval`'s own responses file) and `validation.json` (the benchmark file, the model, the step and
how the answers were generated). The trainer writes it (medical_team/task_runner/trainer.py), the evaluation reads
it (medical_team/evaluate/evaluation.py, `score_validation_answers`): docs/evaluation.md, "Validation on the
benchmark".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from medical_team.common.errors import UserInputError

STEP_FOLDER = "step_{step}"
RESPONSES_JSONL = "responses.jsonl"
VALIDATION_JSON = "validation.json"


def generation_record(
    max_new_tokens: int, batch_size: int | None, native_thinking: bool, decoding: str, seconds: float, notes: int
) -> dict[str, Any]:
    """eval.json's `generation`: how a benchmark's answers were made, by `medplay eval` or a run's validation."""
    return {
        "max_new_tokens": max_new_tokens,
        "batch_size": batch_size,
        "native_thinking": native_thinking,
        "decoding": decoding,
        "seconds": round(seconds, 3),
        "notes_per_second": round(notes / seconds, 3) if seconds > 0 else None,
    }


def write_benchmark_answers(answers: Sequence[dict[str, str]], folder: Path, about: dict[str, Any]) -> Path:
    """Write one validation's answers (the first per note when a note got several) and what made them; return `folder`."""
    responses: dict[str, str] = {}
    for answer in answers:
        responses.setdefault(answer["text_id"], answer["response"])
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / RESPONSES_JSONL).open("w", encoding="utf-8") as handle:
        for text_id in sorted(responses):
            handle.write(json.dumps({"text_id": text_id, "response": responses[text_id]}, ensure_ascii=False) + "\n")
    (folder / VALIDATION_JSON).write_text(json.dumps({**about, "notes": len(responses)}, indent=2) + "\n", "utf-8")
    return folder


def read_benchmark_answers(folder: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """What made a validation's answers, and the answers by note id; `UserInputError` naming a missing or bad file."""
    about_path, answers_path = folder / VALIDATION_JSON, folder / RESPONSES_JSONL
    try:
        about = json.loads(_text(about_path))
    except json.JSONDecodeError as error:
        raise UserInputError(f"not JSON ({error.msg})", file=str(about_path), row=error.lineno) from None
    if not isinstance(about, dict) or "benchmark" not in about:
        raise UserInputError("names no benchmark file", file=str(about_path), field="benchmark")
    answers: dict[str, str] = {}
    for row, line in enumerate(_text(answers_path).splitlines(), start=1):
        try:
            record = json.loads(line)
            answers[str(record["text_id"])] = str(record["response"])
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            raise UserInputError(f"not a {{text_id, response}} JSON line ({error})", file=str(answers_path), row=row) from None
    return about, answers


def _text(path: Path) -> str:
    """A file's text, or `UserInputError` naming it."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserInputError("not found; give a folder a training run's validation wrote", file=str(path)) from None
