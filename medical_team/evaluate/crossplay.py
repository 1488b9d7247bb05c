"""Cross-play league: the attacker of every checkpoint against the assessor of every checkpoint (N x N, diagonal too).

Every game of every cell is played by the training game's own driver (`game.driver.play_game`, through
`game.batch.play_batch`) on the same fixed seeds with the same judge; only the generator differs:
attacker prompts go to the row's checkpoint, assessor prompts to the column's. Prompts are not cut
(training cuts them to `data.max_prompt_length`; docs/game.md, "The game driver"). Decoding is greedy, so a checkpoint's answer to a prompt
is cached and replayed in every cell that asks it again (each attacker writes its rewrites once, each
assessor reads the unchanged vanilla notes once), and the judge settles each distinct rewrite once.
At most one model is loaded at a time.

league = play_league(checkpoints, seeds, judge, load)
league.cells[i][j]   # attacker of checkpoint i against the assessor of checkpoint j
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medical_team.common.vocab import Role
from medical_team.evaluate.league_seeds import LeagueSeeds
from medical_team.game.batch import Generator, play_batch
from medical_team.game.driver import PlayedGame, Reply
from medical_team.game.judging import Judge, JudgeRequest, JudgeVerdict
from medical_team.game.prompts import Message, prompt_role
from medical_team.game.settle import GameConfig

Loader = Callable[[Path | str], Generator]


@dataclass(frozen=True)
class Checkpoint:
    """One league entrant: its label in the matrix, the path the user gave and the HF folder it resolved to."""

    label: str
    given: str
    model: Path | str


class ModelPool:
    """Loads checkpoints on demand and keeps at most one in memory (N vLLM engines would not fit a GPU)."""

    def __init__(self, checkpoints: Sequence[Checkpoint], load: Loader) -> None:
        self.checkpoints = list(checkpoints)
        self.load = load
        self.loads = 0
        self._index: int | None = None
        self._generator: Generator | None = None

    def get(self, index: int) -> Generator:
        """The generator of checkpoint `index`, loading it (and releasing the one held) when needed."""
        if self._index != index or self._generator is None:
            self.release()
            self._generator = self.load(self.checkpoints[index].model)
            self._index = index
            self.loads += 1
        return self._generator

    def release(self) -> None:
        """Drop the loaded model and give its memory back."""
        self._generator, self._index = None, None
        gc.collect()
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:  # pragma: no cover - torch is a dependency of every backend
            pass


class CachedModel:
    """A checkpoint as a game `Generator`: generates only prompts it has not answered yet (greedy replays itself)."""

    def __init__(self, pool: ModelPool, index: int) -> None:
        self.pool = pool
        self.index = index
        self.cache: dict[str, str] = {}
        self.generated = 0

    def generate(self, prompts: Sequence[list[Message]]) -> list[str]:
        """One response per prompt, in order."""
        keys = [json.dumps(messages, sort_keys=True) for messages in prompts]
        missing = list(dict.fromkeys(key for key in keys if key not in self.cache))
        if missing:
            texts = self.pool.get(self.index).generate([json.loads(key) for key in missing])
            if len(texts) != len(missing):
                raise RuntimeError(f"checkpoint {self.index} returned {len(texts)} texts for {len(missing)} prompts")
            self.cache.update(zip(missing, texts, strict=True))
            self.generated += len(missing)
        return [self.cache[key] for key in keys]


class RoleRouter:
    """A game `Generator` that sends attacker prompts to one model and assessor prompts to another."""

    def __init__(self, attacker: CachedModel, assessor: CachedModel) -> None:
        self.models = {Role.ATTACKER: attacker, Role.ASSESSOR: assessor}

    def generate(self, prompts: Sequence[list[Message]]) -> list[str]:
        """One response per prompt, in order, each from the model of the role it addresses."""
        roles = [prompt_role(messages) for messages in prompts]
        out: list[str | None] = [None] * len(prompts)
        for role, model in self.models.items():
            indices = [i for i, r in enumerate(roles) if r is role]
            for i, text in zip(indices, model.generate([prompts[i] for i in indices]) if indices else [], strict=True):
                out[i] = text
        return [text for text in out if text is not None]


class CachedJudge:
    """A `Judge` that settles each distinct request once; the same rewrite gets the same verdict in every cell."""

    def __init__(self, judge: Judge) -> None:
        self.judge_backend = judge
        self.cache: dict[JudgeRequest, JudgeVerdict] = {}

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """One verdict per request, in order."""
        missing = list(dict.fromkeys(r for r in requests if r not in self.cache))
        if missing:
            self.cache.update(zip(missing, self.judge_backend.judge(missing), strict=True))
        return [self.cache[r] for r in requests]


@dataclass(frozen=True)
class Cell:
    """One attacker-assessor pairing: the game counts and the training game's own metrics for its games."""

    attacker: int
    assessor: int
    games: list[PlayedGame[Reply]]
    metrics: dict[str, float]

    def counts(self) -> dict[str, int]:
        """Game counts; games = decided + ties, decided = correct + wrong, adversarial = successes + failures + ties."""
        outcomes = [g.outcome for g in self.games]
        decided = [o for o in outcomes if not o.tie]
        adversarial = [o for o in outcomes if o.adversarial]
        adversarial_decided = [o for o in adversarial if not o.tie]
        return {
            "games": len(outcomes),
            "ties": len(outcomes) - len(decided),
            "decided": len(decided),
            "assessor_correct": sum(bool(o.assessor_correct) for o in decided),
            "assessor_wrong": sum(not o.assessor_correct for o in decided),
            "adversarial_games": len(adversarial),
            "adversarial_ties": len(adversarial) - len(adversarial_decided),
            "attacker_successes": sum(not o.assessor_correct for o in adversarial_decided),
            "attacker_failures": sum(bool(o.assessor_correct) for o in adversarial_decided),
        }

    def record(self) -> dict[str, Any]:
        """The cell as JSON: indices, counts and the rates of the matrices (from `game_metrics`)."""
        return {
            "attacker": self.attacker,
            "assessor": self.assessor,
            **self.counts(),
            "attacker_success_rate": self.metrics["attacker/success_rate"],
            "assessor_accuracy": self.metrics["assessor/accuracy"],
            "attacker_faithfulness_rate": self.metrics["attacker/faithfulness_rate"],
            "attacker_format_violation_rate": self.metrics["attacker/format_violation_rate"],
            "assessor_format_violation_rate": self.metrics["assessor/format_violation_rate"],
        }


@dataclass(frozen=True)
class League:
    """Every cell of the league, `cells[attacker][assessor]`, with the checkpoints and seeds it was played on."""

    checkpoints: list[Checkpoint]
    seeds: LeagueSeeds
    cells: list[list[Cell]]
    model_loads: int
    judged_rewrites: int

    def matrix(self, key: str) -> list[list[float]]:
        """One rate of every cell, rows attackers and columns assessors."""
        return [[cell.record()[key] for cell in row] for row in self.cells]


def play_order(n: int) -> list[tuple[int, int]]:
    """Cells in the order that loads each model at most twice: the diagonal first, then by assessor."""
    return [(k, k) for k in range(n)] + [(i, j) for j in reversed(range(n)) for i in range(n) if i != j]


def play_league(
    checkpoints: Sequence[Checkpoint],
    seeds: LeagueSeeds,
    judge: Judge,
    load: Loader,
    on_cell: Callable[[Cell], None] | None = None,
) -> League:
    """Play every attacker against every assessor on the same seeds with the training game's driver."""
    if len(checkpoints) < 2:
        raise ValueError(f"a league needs at least 2 checkpoints, got {len(checkpoints)}")
    pool = ModelPool(checkpoints, load)
    models = [CachedModel(pool, k) for k in range(len(checkpoints))]
    cached_judge = CachedJudge(judge)
    config = GameConfig(benign_mode=seeds.benign_mode)
    cells: dict[tuple[int, int], Cell] = {}
    try:
        for i, j in play_order(len(checkpoints)):
            batch = play_batch(seeds.seeds, RoleRouter(models[i], models[j]), cached_judge, config)
            cells[i, j] = Cell(i, j, batch.games, batch.metrics)
            if on_cell is not None:
                on_cell(cells[i, j])
    finally:
        pool.release()
    n = len(checkpoints)
    return League(
        checkpoints=list(checkpoints),
        seeds=seeds,
        cells=[[cells[i, j] for j in range(n)] for i in range(n)],
        model_loads=pool.loads,
        judged_rewrites=len(cached_judge.cache),
    )
