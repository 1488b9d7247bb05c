"""`medplay convert` warns about notes no profile's prompt can hold: real CSVs, the real CLI in its own process.

.venv/bin/python -m pytest -q tests/game/test_note_lengths.py
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from long_notes import LONG_NOTE_ID, write_long_note_csv
from omegaconf import OmegaConf
from transformers import AutoTokenizer

from medical_team.data.medec import TEST_CSV, VALIDATION_CSV, bundled_csv, load_medec
from medical_team.game.note_lengths import MAX_CHARS_PER_TOKEN, largest_prompt_length, long_notes

MEDPLAY = Path(sys.executable).parent / "medplay"
FLAT_CONFIGS = Path(__file__).parents[2] / "docs" / "config"


def test_the_limit_is_the_largest_prompt_length_of_the_composed_profiles():
    composed = [OmegaConf.load(path).data.max_prompt_length for path in FLAT_CONFIGS.glob("*.yaml")]
    assert len(composed) == 6 and largest_prompt_length() == max(composed) == 2048


def test_no_bundled_note_is_named_and_the_bound_is_below_the_tiny_tokenizers_tokens(tiny_model_dir):
    notes = [*load_medec(bundled_csv(VALIDATION_CSV)).notes, *load_medec(bundled_csv(TEST_CSV)).notes]
    assert long_notes(notes, 2048) == []
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    assert all(len(note.text) / len(tokenizer.encode(note.text)) < MAX_CHARS_PER_TOKEN for note in notes)


def test_medplay_convert_warns_naming_file_row_and_text_id(tmp_path):
    csv = write_long_note_csv(tmp_path / "long.csv")
    output = tmp_path / "data"
    done = subprocess.run(
        [str(MEDPLAY), "convert", "--input", str(csv), "--output", str(output), "--benchmark-notes", "4"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith(
        "medplay convert: warning: 1 note(s) cannot fit any profile's prompt (data.max_prompt_length at most 2048 "
        f"tokens; counted as at least one token per {MAX_CHARS_PER_TOKEN:g} characters)"
    )
    assert lines[1].startswith(f"  long.csv row 8 (Text ID {LONG_NOTE_ID}): ") and len(lines) == 2
    report = json.loads((output / "dataset_report.json").read_text())
    assert [note["text_id"] for note in report["long_notes"]["notes"]] == [LONG_NOTE_ID]
    assert (output / "train.parquet").is_file()  # a warning: the files are written all the same
