"""Notes too long for any profile's prompt, found by `medplay convert` without a tokenizer.

convert runs before a model is chosen, so it counts characters: no tokenizer medplay meets writes more than
MAX_CHARS_PER_TOKEN characters per token on a MEDEC note (over the 1,171 bundled notes at most 5.9 for Qwen3,
6.0 for SmolLM2, 3.6 for the tiny BPE), so the assessor's prompt over a note (the shortest prompt a note gives:
every game shows the assessor the note) of more than MAX_CHARS_PER_TOKEN x N characters cannot fit N tokens.
N is the largest `data.max_prompt_length` of the shipped profiles: a note named here fits none of them. A note
that is only too long for a smaller profile is left to `medplay train`, which counts its prompts exactly in the
run's tokenizer and refuses the run (launcher/plan/prompt_lengths.py).
"""

from __future__ import annotations

import importlib.resources
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from medical_team.configs import PROFILE_GROUP, profile_file
from medical_team.game.prompts import assessor_messages

MAX_CHARS_PER_TOKEN = 6.5
SHOWN = 5  # notes named on the console; the report lists them all


class LocatedNote(Protocol):
    """What the check reads of a note (a `MedecNote` has it): its id, its text and where it is."""

    @property
    def text_id(self) -> str: ...

    @property
    def text(self) -> str: ...

    @property
    def source_file(self) -> str: ...

    @property
    def source_row(self) -> int | None: ...


@dataclass(frozen=True)
class LongNote:
    """A note whose prompt cannot fit `prompt_length` tokens: where it is, its length, and its fewest tokens."""

    file: str
    row: int | None  # 1-based data row of its file; None for a note that is a whole file (a plain .txt note)
    text_id: str
    characters: int  # of the assessor's prompt over it (system prompt, question, note)
    min_tokens: int

    def line(self) -> str:
        """`file row N (Text ID x): C characters, at least T tokens`."""
        where = self.file if self.row is None else f"{self.file} row {self.row}"
        return f"{where} (Text ID {self.text_id}): {self.characters} characters, at least {self.min_tokens} tokens"


def largest_prompt_length() -> int:
    """The largest `data.max_prompt_length` among the shipped profiles (configs/profile/*.yaml and their defaults)."""
    folder = importlib.resources.files("medical_team.configs") / PROFILE_GROUP
    names = [entry.name.removesuffix(".yaml") for entry in folder.iterdir() if entry.name.endswith(".yaml")]
    return max(_profile_prompt_length(name) for name in names)


def _profile_prompt_length(name: str) -> int:
    """A profile's `data.max_prompt_length`: its own, else that of the files its `defaults:` lists."""
    found = profile_file(name).get("data", {}).get("max_prompt_length")
    for default in profile_file(name).get("defaults", []):
        if found is None and isinstance(default, str) and default != "_self_":
            found = _profile_prompt_length(default)
    if found is None:
        raise ValueError(f"profile {name} sets no data.max_prompt_length")
    return int(found)


def long_notes(notes: Iterable[LocatedNote], prompt_length: int) -> list[LongNote]:
    """The notes whose assessor prompt has more than MAX_CHARS_PER_TOKEN x `prompt_length` characters."""
    found = []
    for note in notes:
        characters = sum(len(message["content"]) for message in assessor_messages(note.text))
        min_tokens = math.ceil(characters / MAX_CHARS_PER_TOKEN)
        if min_tokens > prompt_length:
            found.append(LongNote(note.source_file, note.source_row, note.text_id, characters, min_tokens))
    return found


def long_notes_report(notes: Iterable[LocatedNote]) -> dict[str, Any]:
    """The dataset report's `long_notes`: the bound used and every note over it."""
    limit = largest_prompt_length()
    return {
        "prompt_length": limit,
        "max_chars_per_token": MAX_CHARS_PER_TOKEN,
        "notes": [asdict(note) for note in long_notes(notes, limit)],
    }


def warning_lines(report: dict[str, Any]) -> list[str]:
    """`medplay convert`'s warning: one summary line, then the first SHOWN notes (none when every note fits)."""
    notes = [LongNote(**note) for note in report["notes"]]
    if not notes:
        return []
    more = f"; {len(notes) - SHOWN} more in dataset_report.json" if len(notes) > SHOWN else ""
    summary = (
        f"{len(notes)} note(s) cannot fit any profile's prompt (data.max_prompt_length at most "
        f"{report['prompt_length']} tokens; counted as at least one token per {MAX_CHARS_PER_TOKEN:g} characters): "
        f"`medplay train` refuses data holding them; shorten them or leave them out{more}"
    )
    return [summary, *(f"  {note.line()}" for note in notes[:SHOWN])]
