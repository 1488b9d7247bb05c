"""A small training run's output folder for `medplay report` tests, written by the product's own code.

Each step plays real MEDEC seeds of all four categories through the game driver (`play_batch`) with the
rules judge and a deterministic policy (`EditingPolicy`); the trainer's game-record code picks the step's
games and its writer writes them (`step_records`, `write_step_records`), and verl's Tracking file logger
writes the step's game metrics and collapse monitors. One adversarial seed note carries a `<script>` element,
which the report must show as text. `Page` reads a report page's elements and text.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path

import pytest

from medical_team.common.vocab import Category
from medical_team.data.medec import VALIDATION_CSV, bundled_csv, load_medec
from medical_team.data.records import GameSeed
from medical_team.data.seeds import build_seeds
from medical_team.game.batch import play_batch
from medical_team.game.game_records import GameRecord, games_folder, step_records
from medical_team.game.monitors import collapse_monitors
from medical_team.game.prompts import Message
from medical_team.judge.rules import RulesJudge

STEPS = 3
SEEDS_PER_CATEGORY = 3  # 12 games a step
GAMES_PER_STEP = 6  # fewer than the step's games, so the pick matters
SCRIPT = '<script>document.title = "script ran"</script>'
_NUMBER = re.compile(r"\b(\d+)\b")


class EditingPolicy:
    """A deterministic policy: the attacker multiplies the note's first number by ten (a dose error); the assessor
    answers ERROR on notes of even length, quoting their first sentence, and NO_ERROR on the others."""

    def generate(self, prompts: Sequence[list[Message]]) -> list[str]:
        """One compliant response per prompt."""
        return [self._respond(messages) for messages in prompts]

    @staticmethod
    def _respond(messages: list[Message]) -> str:
        note = messages[-1]["content"].split("Clinical note:\n", 1)[1]
        if "You are the Attacker" in messages[0]["content"]:
            edited = _NUMBER.sub(lambda m: str(int(m.group(1)) * 10), note, count=1)
            return f"Make the first dose ten times larger. </think> <answer>\n{edited}\n</answer>"
        if len(note) % 2:
            return "Checked the <b>doses</b>. </think> <answer>\nverdict: NO_ERROR\n</answer>"
        first = note.split(". ", 1)[0]
        return f"One sentence looks wrong. </think> <answer>\nverdict: ERROR\nsentence: {first}\n</answer>"


@functools.cache
def _all_seeds() -> tuple[GameSeed, ...]:
    """The bundled MEDEC validation file's seeds."""
    return tuple(build_seeds(load_medec(bundled_csv(VALIDATION_CSV)).notes, seed=0))


def step_seeds(step: int) -> list[GameSeed]:
    """SEEDS_PER_CATEGORY real MEDEC seeds of each category, different ones each step; step 1's first adversarial
    seed note ends in SCRIPT."""
    seeds = _all_seeds()
    start = (step - 1) * SEEDS_PER_CATEGORY
    picked = [s for c in Category for s in [s for s in seeds if s.category is c][start : start + SEEDS_PER_CATEGORY]]
    if step == 1:
        index = next(i for i, s in enumerate(picked) if s.category is Category.ADVERSARIAL_HARMFUL)
        picked[index] = dataclasses.replace(picked[index], text=f"{picked[index].text} {SCRIPT}")
    return picked


def write_run(root: Path) -> tuple[Path, dict[int, list[GameRecord]]]:
    """Play and record STEPS steps into `root` (`checkpoints/metrics.jsonl`, `checkpoints/games/`); return the
    metrics file and the records written, by step."""
    from verl.utils.tracking import Tracking

    from medical_team.task_runner.game_records_file import write_step_records

    metrics_file = root / "checkpoints" / "metrics.jsonl"
    metrics_file.parent.mkdir(parents=True, exist_ok=True)
    written = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VERL_FILE_LOGGER_PATH", str(metrics_file))
        tracking = Tracking(project_name="medplay", experiment_name="report-run", default_backend=["file"])
        for step in range(1, STEPS + 1):
            batch = play_batch(step_seeds(step), EditingPolicy(), RulesJudge())
            outcomes = [game.outcome for game in batch.games]
            traces = [game.trace(lambda turn: len(turn.response.split()), 64) for game in batch.games]
            written[step] = step_records(step, outcomes, traces, GAMES_PER_STEP)
            write_step_records(games_folder(metrics_file), step, written[step])
            data = {**batch.metrics, **collapse_monitors(outcomes, traces, 64).values, "timing_s/step": 1.0 + step}
            tracking.log(data=data, step=step)
        tracking.finish()
    return metrics_file, written


class Page(HTMLParser):
    """The page's elements (tag, attributes) and its text as a browser shows it (entities decoded)."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.texts: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.texts.append(data)

    def tags(self, name: str) -> list[dict[str, str | None]]:
        """The attributes of every `name` element."""
        return [attrs for tag, attrs in self.elements if tag == name]

    @property
    def text(self) -> str:
        return "".join(self.texts)
