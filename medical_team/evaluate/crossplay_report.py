"""Writes a cross-play league: crossplay.json, crossplay.md, crossplay.png (heat maps) and crossplay_games.jsonl."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from medical_team.evaluate.crossplay import Cell, League

CROSSPLAY_JSON = "crossplay.json"
CROSSPLAY_MD = "crossplay.md"
CROSSPLAY_PNG = "crossplay.png"
CROSSPLAY_GAMES = "crossplay_games.jsonl"

MATRICES = (
    ("attacker_success_rate", "Attacker success rate (assessor wrong, adversarial games)"),
    ("assessor_accuracy", "Assessor accuracy (all decided games)"),
)

READING_RULE = (
    "Rows are attackers and columns are assessors, both in the order the checkpoints were given (oldest "
    "first); the diagonal is each checkpoint against itself. **Progress**: a later assessor also beats the "
    "earlier attackers: down each column the attacker success rate of older attackers stays at or below "
    "what they reached against their own assessor (the diagonal), and along each row it falls as the "
    "assessor gets newer. **Cycling**: a later assessor beats only the latest attacker, while older "
    "attackers succeed against it again (positive changes in the table below)."
)


def older_attacker_changes(league: League) -> list[dict[str, Any]]:
    """For each assessor j and each older attacker i < j: success(i, j) - success(i, i); negative means progress."""
    success = league.matrix("attacker_success_rate")
    return [
        {
            "attacker": i,
            "assessor": j,
            "success_vs_own_assessor": success[i][i],
            "success_vs_later_assessor": success[i][j],
            "change": success[i][j] - success[i][i],
        }
        for j in range(len(success))
        for i in range(j)
    ]


def league_record(league: League, about: dict[str, Any]) -> dict[str, Any]:
    """Everything crossplay.json holds: settings, checkpoints, seeds, both matrices, every cell's counts."""
    seeds = league.seeds
    categories: dict[str, int] = {}
    for seed in seeds.seeds:
        categories[seed.category.value] = categories.get(seed.category.value, 0) + 1
    return {
        **about,
        "checkpoints": [{"label": c.label, "given": c.given, "resolved": str(c.model)} for c in league.checkpoints],
        "seeds": {
            "source": seeds.source,
            "games_per_cell": len(seeds.seeds),
            "benign_mode": seeds.benign_mode.value,
            "categories": categories,
            "note_ids": [seed.note_id for seed in seeds.seeds],
        },
        "rows": "attacker",
        "columns": "assessor",
        **{key: league.matrix(key) for key, _ in MATRICES},
        "cells": [[cell.record() for cell in row] for row in league.cells],
        "older_attacker_changes": older_attacker_changes(league),
        "model_loads": league.model_loads,
        "judged_rewrites": league.judged_rewrites,
    }


def _hits(cell: Cell, key: str) -> tuple[int, int]:
    """The games behind one rate: (successes, decided adversarial) or (correct, decided)."""
    counts = cell.counts()
    if key == "attacker_success_rate":
        return counts["attacker_successes"], counts["attacker_successes"] + counts["attacker_failures"]
    return counts["assessor_correct"], counts["decided"]


def _table(league: League, key: str) -> list[str]:
    """One matrix as a Markdown table; each cell shows the rate and its games (successes/decided)."""
    labels = [c.label for c in league.checkpoints]
    lines = ["| attacker \\ assessor | " + " | ".join(labels) + " |", "|---" * (len(labels) + 1) + "|"]
    for label, row in zip(labels, league.cells, strict=True):
        cells = []
        for cell in row:
            hits, total = _hits(cell, key)
            cells.append(f"{cell.record()[key]:.3f} ({hits}/{total})")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def league_markdown(league: League, record: dict[str, Any]) -> str:
    """crossplay.md: settings, the reading rule, both matrices, older attackers against later assessors."""
    labels = [c.label for c in league.checkpoints]
    seeds = record["seeds"]
    lines = [
        "# Cross-play league",
        "",
        f"- checkpoints: {', '.join(f'`{c.label}` = {c.given}' for c in league.checkpoints)}",
        (
            f"- seeds: {seeds['games_per_cell']} games per cell from {seeds['source']} ({seeds['categories']}), "
            f"benign mode {seeds['benign_mode']}"
        ),
        (
            f"- judge: {record['judge']}; backend: {record['backend']}; decoding: {record['decoding']}, "
            f"max {record['max_new_tokens']} new tokens"
        ),
        "",
        READING_RULE,
        "",
    ]
    for key, title in MATRICES:
        lines += [f"## {title}", "", *_table(league, key), ""]
    lines += [
        "## Older attackers against later assessors",
        "",
        "| attacker | assessor | success vs own assessor | success vs later assessor | change |",
        "|---|---|---|---|---|",
    ]
    for change in record["older_attacker_changes"]:
        lines.append(
            f"| {labels[change['attacker']]} | {labels[change['assessor']]} | {change['success_vs_own_assessor']:.3f} "
            f"| {change['success_vs_later_assessor']:.3f} | {change['change']:+.3f} |"
        )
    lines += ["", "Ties (the judge could not decide) count in neither rate; every cell's counts are in crossplay.json."]
    return "\n".join(lines) + "\n"


def plot_league(league: League, path: Path) -> None:
    """Side-by-side heat maps of both matrices, each cell annotated with its rate and game count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [c.label for c in league.checkpoints]
    n = len(labels)
    size = max(4.0, 1.1 * n + 2.0)
    figure, axes = plt.subplots(1, len(MATRICES), figsize=(2 * size, size), squeeze=False)
    for axis, (key, title) in zip(axes[0], MATRICES, strict=True):
        values = league.matrix(key)
        image = axis.imshow(values, vmin=0.0, vmax=1.0, cmap="viridis")
        axis.set_title(title, fontsize=9)
        axis.set_xticks(range(n), labels, rotation=45, ha="right")
        axis.set_yticks(range(n), labels)
        axis.set_xlabel("assessor")
        axis.set_ylabel("attacker")
        for i, row in enumerate(league.cells):
            for j, cell in enumerate(row):
                hits, total = _hits(cell, key)
                color = "black" if values[i][j] > 0.6 else "white"
                axis.text(
                    j, i, f"{values[i][j]:.2f}\n{hits}/{total}", ha="center", va="center", color=color, fontsize=8
                )
        figure.colorbar(image, ax=axis, fraction=0.046, pad=0.04)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def game_lines(league: League) -> list[str]:
    """One JSON line per played game: its cell, the seed, both responses and the settled outcome."""
    lines = []
    for row in league.cells:
        for cell in row:
            for game in cell.games:
                turns = {turn.role.value: turn.response for turn in game.turns}
                record = {"attacker": cell.attacker, "assessor": cell.assessor, "responses": turns}
                lines.append(json.dumps({**record, **game.outcome.to_record()}, ensure_ascii=False))
    return lines


def write_league(league: League, output: Path, about: dict[str, Any]) -> dict[str, Any]:
    """Write the four files into `output` (created); return the JSON record."""
    output.mkdir(parents=True, exist_ok=True)
    record = league_record(league, about)
    (output / CROSSPLAY_JSON).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (output / CROSSPLAY_MD).write_text(league_markdown(league, record), encoding="utf-8")
    plot_league(league, output / CROSSPLAY_PNG)
    (output / CROSSPLAY_GAMES).write_text("\n".join(game_lines(league)) + "\n", encoding="utf-8")
    return record
