"""The training report as one self-contained HTML page, `report.html`: the curves, then a few games of each step.

`medplay report` writes it beside the PNGs and report.md. The page needs no network: the CSS is inline,
each plot is its PNG as a base64 `data:` URI, and there is no script. Every text a model or the data wrote
(notes, rewrites, responses, the judge's reason) goes through `html.escape`, so a note holding markup shows
it as text. The rewrite is shown as a word-level diff against the seed note (`difflib`): what the attacker
removed in `<del>`, what it added in `<ins>`. The games are the trainer's records (`game/game_records.py`).
"""

from __future__ import annotations

import base64
import difflib
import re
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path

from medical_team.common.vocab import Label
from medical_team.evaluate.metrics_log import MetricsHistory
from medical_team.evaluate.training_report import PlotResult
from medical_team.game.game_records import GameRecord

PAGE_NAME = "report.html"
_TOKEN = re.compile(r"\s+|\S+")  # words and the whitespace between them: the diff keeps the note's layout

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 75em; padding: 0 1em; color: #222; }
h1, h2, h3 { font-weight: 600; }
nav a { margin-right: 0.6em; }
figure { display: inline-block; width: calc(33.3% - 1.2em); margin: 0.5em; vertical-align: top; }
figure img { width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 0.8em; color: #555; }
summary { font-size: 1.3em; font-weight: 600; cursor: pointer; margin: 0.8em 0; }
.game { border: 1px solid #ccc; border-radius: 6px; padding: 0.6em 1em; margin: 0 0 1.2em; }
.game h4 { margin: 0.2em 0 0.5em; }
.facts { border-collapse: collapse; font-size: 0.92em; margin-bottom: 0.6em; }
.facts th { text-align: left; padding: 0.15em 1em 0.15em 0; color: #555; font-weight: 500; vertical-align: top; }
.facts td { padding: 0.15em 0; }
.text { white-space: pre-wrap; font-family: ui-monospace, monospace; font-size: 0.86em; background: #f7f7f7;
        padding: 0.6em; border-radius: 4px; max-height: 30em; overflow: auto; }
del { background: #fbd3d3; color: #7a1010; }
ins { background: #cdeccd; color: #0b4d0b; text-decoration: none; }
.right { color: #0b6b0b; font-weight: 600; }
.wrong { color: #a31515; font-weight: 600; }
.muted { color: #777; }
"""


def word_diff(before: str, after: str) -> str:
    """HTML of `after` against `before`, word by word: removed words in `<del>`, added ones in `<ins>`, all escaped."""
    old, new = _TOKEN.findall(before), _TOKEN.findall(after)
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(escape("".join(new[j1:j2])))
            continue
        if i2 > i1:
            out.append(f"<del>{escape(''.join(old[i1:i2]))}</del>")
        if j2 > j1:
            out.append(f"<ins>{escape(''.join(new[j1:j2]))}</ins>")
    return "".join(out)


def write_report_html(
    history: MetricsHistory,
    plots: Sequence[PlotResult],
    games: Mapping[int, list[GameRecord]],
    games_folder: Path,
    output: Path,
) -> Path:
    """Write `report.html` into `output` (the plots' PNGs must be there) and return its path.

    `games` are the records read from `games_folder` (`read_game_records`), which the page names.
    """
    output.mkdir(parents=True, exist_ok=True)
    page = output / PAGE_NAME
    page.write_text(report_html(history, plots, games, games_folder), encoding="utf-8")
    return page


def report_html(
    history: MetricsHistory, plots: Sequence[PlotResult], games: Mapping[int, list[GameRecord]], games_folder: Path
) -> str:
    """The whole page as a string."""
    steps = sorted(games)
    nav = ['<a href="#curves">Curves</a>'] + [f'<a href="#step-{s}">step {s}</a>' for s in steps]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>medplay training report</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>Training report</h1>",
        _header(history, games_folder),
        f"<nav>{' '.join(nav)}</nav>",
        _curves(plots),
        _games(games),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _header(history: MetricsHistory, games_folder: Path) -> str:
    """Where the figures come from."""
    steps = f"steps {history.steps[0]}&ndash;{history.steps[-1]} ({len(history.steps)} logged)"
    source, folder = escape(history.source), escape(str(games_folder))
    return f"<p>Metrics file: <code>{source}</code>; {steps}. Game records: <code>{folder}</code>.</p>"


def _curves(plots: Sequence[PlotResult]) -> str:
    """The drawn plots as inline PNGs, then the names of those with no series logged."""
    figures = []
    for plot in plots:
        if plot.png is None:
            continue
        data = base64.b64encode(plot.png.read_bytes()).decode("ascii")
        figures.append(
            f'<figure><img alt="{escape(plot.title)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{escape(plot.title)}: {escape(', '.join(plot.labels))}</figcaption></figure>"
        )
    missing = [plot.title for plot in plots if plot.png is None]
    note = (
        f'<p class="muted">Not drawn, none of their series logged: {escape("; ".join(missing))}.</p>' if missing else ""
    )
    return f'<section id="curves"><h2>Curves</h2>{"".join(figures)}{note}</section>'


def _games(games: Mapping[int, list[GameRecord]]) -> str:
    """One folding section per step with its recorded games, or why there are none."""
    if not games:
        return (
            '<section id="games"><h2>Games</h2><p class="muted">No game records in that folder: the run kept '
            "none (medplay.report.games_per_step is 0, or medplay did not record games yet when it trained), or "
            "they are elsewhere (<code>medplay report --games DIR</code>).</p></section>"
        )
    intro = (
        "<p>The games the trainer recorded at each step (medplay.report.games_per_step): taken in turns from "
        "each category, each category's in note-id order. A rewrite is shown against its seed note: "
        "<del>removed</del> and <ins>added</ins> words.</p>"
    )
    steps = []
    for step in sorted(games):
        articles = "".join(_game(record) for record in games[step]) or '<p class="muted">No games recorded.</p>'
        steps.append(
            f'<details open id="step-{step}"><summary>Step {step} ({len(games[step])} games)</summary>'
            f"{articles}</details>"
        )
    return f'<section id="games"><h2>Games</h2>{intro}{"".join(steps)}</section>'


def _game(record: GameRecord) -> str:
    """One game: what was settled about it, the note (or the rewrite against it) and the assessor's response."""
    outcome = record.outcome
    title = f"{escape(outcome.category.value)} &middot; note {escape(outcome.note_id)}"
    if record.rewrite is None:
        text = f'<h5>Note (vanilla game: the assessor read it as is)</h5><div class="text">{escape(record.note)}</div>'
    else:
        same = ' <span class="muted">(identical to the seed note)</span>' if record.rewrite == record.note else ""
        text = (
            f"<h5>Attacker's rewrite against the seed note{same}</h5>"
            f'<div class="text diff">{word_diff(record.note, record.rewrite)}</div>'
        )
    response = f'<h5>Assessor\'s response</h5><div class="text response">{escape(record.assessor_response)}</div>'
    return f'<article class="game"><h4>{title}</h4>{_facts(record)}{text}{response}</article>'


def _facts(record: GameRecord) -> str:
    """The settled facts of a game as a two-column table."""
    outcome = record.outcome
    rows = []
    if outcome.adversarial:
        rows.append(("attacker asked for", _label(outcome.intended)))
        judge = "tie: the judge could not decide" if outcome.tie else f"truth {_label(outcome.truth)}"
        if not outcome.tie:
            judge += f", rewrite {'faithful' if outcome.faithful else 'not faithful'}"
        if outcome.judge_parse_error:
            judge += ", its answer unreadable"
        rows.append(("judge", f"{judge}; reason: {escape(outcome.judge_reason or '(none given)')}"))
        if outcome.judge_injection is not None:
            rows.append(
                ("attacker forfeits", f"the judge's language in its rewrite: {escape(outcome.judge_injection)}")
            )
    else:
        rows.append(("truth", f"{_label(outcome.truth)} (the data's label)"))
    verdict = _label(outcome.verdict) if outcome.verdict is not None else "unreadable"
    if outcome.assessor_correct is not None:
        mark = '<span class="right">right</span>' if outcome.assessor_correct else '<span class="wrong">wrong</span>'
        verdict += f" ({mark})"
    rows.append(("assessor's verdict", verdict))
    if outcome.error_type is not None:
        rows.append(("error type", escape(outcome.error_type)))
    if outcome.known_error_sentence is not None:
        matched = "quoted by the assessor" if outcome.sentence_match else "not quoted by the assessor"
        rows.append(("error sentence", f"{escape(outcome.known_error_sentence)} ({matched})"))
    rows.append(("rewards", _rewards(record)))
    violations = [
        f"{role}: {escape(', '.join(found))}"
        for role, found in (("attacker", outcome.attacker_violations), ("assessor", outcome.assessor_violations))
        if found
    ]
    rows.append(("format", "; ".join(violations) if violations else "compliant"))
    if outcome.dropped:
        rows.append(("dropped", "a tie: neither role's sample trained"))
    cells = "".join(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in rows)
    return f'<table class="facts">{cells}</table>'


def _rewards(record: GameRecord) -> str:
    """Both roles' total rewards with their terms; a role without a sample says so."""
    outcome = record.outcome
    parts = []
    for role, total, terms in (
        ("attacker", outcome.attacker_reward, outcome.attacker_terms),
        ("assessor", outcome.assessor_reward, outcome.assessor_terms),
    ):
        if terms is None:
            continue  # the attacker of a vanilla game
        if total is None:
            parts.append(f"{role}: no sample")
            continue
        detail = ", ".join(f"{escape(name)} {value:+.2f}" for name, value in terms.items())
        parts.append(f"{role} <strong>{total:+.2f}</strong> ({detail})")
    return "; ".join(parts)


def _label(label: Label | None) -> str:
    """A label in words."""
    return "none" if label is None else {Label.ERROR: "error", Label.NO_ERROR: "no error"}[label]
