"""A step's game records: a few of its games with their texts, as JSON lines, for `medplay report`'s page.

The trainer keeps `medplay.report.games_per_step` games of each step (`step_records`), picked the same
way in every run whatever order the games finished in, and writes them before the step is committed to
`<folder of medplay.metrics_file>/games/step_<N>.jsonl` (`task_runner/game_records_file.py`); a
step played again after a resume replaces its file. `medplay report` reads the folder with
`read_game_records`. A record is one JSON object per line: the step, every field of the game's
`GameOutcome.to_record()` (category, note_id, truth, the assessor's verdict, the judge's faithfulness and
reason, error type, format violations, reward terms), the seed note, the attacker's rewrite (null in vanilla
games), the assessor's raw response, and both roles' total rewards (null when that role has no sample).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from medical_team.common.errors import UserInputError
from medical_team.common.vocab import Category, Label
from medical_team.game.monitors import GameTrace
from medical_team.game.settle import GameOutcome

GAMES_FOLDER = "games"
STEP_FILE = "step_{step}.jsonl"
_STEP_FILE = re.compile(r"^step_(\d+)\.jsonl$")
_TEXTS = ("note", "assessor_response")  # strings in every record; "rewrite" is a string or null
_REQUIRED_OUTCOME = tuple(f.name for f in fields(GameOutcome) if f.name != "judge_injection")
# The order categories take turns in and are listed in: the attacker's first (a rewrite and the judge's verdict).
CATEGORY_ORDER = tuple(sorted(Category, key=lambda category: not category.adversarial))


@dataclass(frozen=True)
class GameRecord:
    """One recorded game: its step, its settled outcome and the texts the outcome was settled on."""

    step: int
    outcome: GameOutcome
    note: str  # the seed note
    rewrite: str | None  # the attacker's rewrite (its parsed answer), what the assessor and the judge read
    assessor_response: str  # the assessor's raw response

    def to_record(self) -> dict[str, Any]:
        """The JSON line's object (the rewards are written for people reading the file; the reader recomputes them)."""
        return {
            "step": self.step,
            **self.outcome.to_record(),
            "note": self.note,
            "rewrite": self.rewrite,
            "assessor_response": self.assessor_response,
            "attacker_reward": self.outcome.attacker_reward,
            "assessor_reward": self.outcome.assessor_reward,
        }


def games_folder(metrics_file: str | Path) -> Path:
    """Where a run's game records live: the `games` folder beside its metrics file."""
    return Path(metrics_file).parent / GAMES_FOLDER


def step_file(folder: Path, step: int) -> Path:
    """The file of one step's records."""
    return folder / STEP_FILE.format(step=step)


def _order(game: tuple[GameOutcome, GameTrace]) -> tuple[str, str, str]:
    """A game's place within its category: by note, then by its texts (a note played twice in a step)."""
    outcome, trace = game
    return outcome.note_id, trace.rewrite or "", trace.assessor_response


def pick_games(games: Sequence[tuple[GameOutcome, GameTrace]], limit: int) -> list[tuple[GameOutcome, GameTrace]]:
    """Up to `limit` games, taken in turns from each category (`CATEGORY_ORDER`), each category's in note order.

    The pick depends only on the games, not on the order they finished in, so a seeded run records the same games.
    """
    queues = [sorted((g for g in games if g[0].category is category), key=_order) for category in CATEGORY_ORDER]
    picked: list[tuple[GameOutcome, GameTrace]] = []
    rank = 0
    while len(picked) < limit and any(rank < len(queue) for queue in queues):
        picked += [queue[rank] for queue in queues if rank < len(queue)][: limit - len(picked)]
        rank += 1
    return sorted(picked, key=lambda g: (CATEGORY_ORDER.index(g[0].category), _order(g)))


def step_records(
    step: int, outcomes: Sequence[GameOutcome], traces: Sequence[GameTrace | None], limit: int
) -> list[GameRecord]:
    """The records of one step: `pick_games` over the games that carry their texts (a trace)."""
    traced = [(o, t) for o, t in zip(outcomes, traces, strict=True) if t is not None]
    return [
        GameRecord(step, outcome, trace.seed_text, trace.rewrite, trace.assessor_response)
        for outcome, trace in pick_games(traced, limit)
    ]


def records_text(records: Sequence[GameRecord]) -> str:
    """The JSON lines of `records`, one a line, each ending in a newline; ASCII (other characters as escapes)."""
    return "".join(json.dumps(record.to_record()) + "\n" for record in records)


def read_game_records(folder: Path) -> dict[int, list[GameRecord]]:
    """Every step's records in `folder` (`step_<N>.jsonl`), by step, ascending; {} when the folder does not exist.

    A malformed line raises `UserInputError` naming the file, the line and the field.
    """
    if not folder.is_dir():
        return {}
    steps = {}
    for path in folder.iterdir():
        match = _STEP_FILE.match(path.name)
        if match:  # other names: e.g. the hidden temporary file of a write the trainer was killed in
            steps[int(match.group(1))] = path
    return {step: _read_step_file(steps[step], step) for step in sorted(steps)}


def _read_step_file(path: Path, step: int) -> list[GameRecord]:
    """The records of one step's file; every line must be a record of that step."""
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        records.append(_parse(line, f"{path.parent.name}/{path.name}", number, step))
    return records


def _parse(line: str, file: str, number: int, step: int) -> GameRecord:
    """One line as a GameRecord; `UserInputError` naming `file`, line `number` and the field that is wrong."""

    def bad(field: str, message: str) -> UserInputError:
        return UserInputError(message, file=file, row=number, field=field)

    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise bad("line", f"not valid JSON ({error.msg})") from None
    if not isinstance(record, dict):
        raise bad("line", "expected a JSON object, one game a line")
    if record.get("step") != step or isinstance(record.get("step"), bool):
        raise bad("step", f"expected {step}, the step in the file's name; found {record.get('step')!r}")
    for name in (*_REQUIRED_OUTCOME, *_TEXTS, "rewrite"):
        if name not in record:
            raise bad(name, "missing")
    for name in _TEXTS:
        if not isinstance(record[name], str):
            raise bad(name, f"expected a string, found {record[name]!r}")
    if record["rewrite"] is not None and not isinstance(record["rewrite"], str):
        raise bad("rewrite", f"expected a string or null, found {record['rewrite']!r}")
    _check_choice(record, "category", [c.value for c in Category], nullable=False, bad=bad)
    for name in ("intended", "truth", "verdict"):
        _check_choice(record, name, [label.value for label in Label], nullable=name != "intended", bad=bad)
    for name in ("assessor_terms", "attacker_terms"):
        terms = record[name]
        if terms is None and name == "attacker_terms":
            continue
        if not isinstance(terms, dict) or not all(_is_number(v) for v in terms.values()):
            raise bad(name, f"expected an object of reward terms (numbers), found {terms!r}")
    return GameRecord(
        step, GameOutcome.from_record(record), record["note"], record["rewrite"], record["assessor_response"]
    )


def _check_choice(record: dict[str, Any], name: str, allowed: list[str], nullable: bool, bad: Any) -> None:
    """Raise `bad(name, ...)` unless `record[name]` is one of `allowed` (or null when `nullable`)."""
    value = record[name]
    if value in allowed or (nullable and value is None):
        return
    choices = ", ".join(allowed) + (" or null" if nullable else "")
    raise bad(name, f"expected one of {choices}; found {value!r}")


def _is_number(value: Any) -> bool:
    """An int or float, not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)
