"""`medplay report`'s report.html on a run folder written by the product's code (tests/report_run.py): one
self-contained page, every recorded game on it, model text escaped, the rewrite's change highlighted.

Run: PYTHONPATH=tests .venv/bin/python -m pytest -q tests/evaluate/test_report_html.py
(the page in a real browser: tests/evaluate/test_report_browser.py)
"""

from __future__ import annotations

import base64
import contextlib
import io
import re
from html import escape
from pathlib import Path

import pytest
from report_run import GAMES_PER_STEP, SCRIPT, STEPS, Page, write_run

from medical_team.cli import main
from medical_team.evaluate.report_html import word_diff
from medical_team.game.game_records import step_file


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, str]:
    """`medplay report` on a three-step run: the output folder, the records written, and the console."""
    root = tmp_path_factory.mktemp("run")
    metrics_file, written = write_run(root)
    output = root / "report"
    console = io.StringIO()
    with contextlib.redirect_stdout(console):
        assert main(["report", "--metrics", str(metrics_file), "--output", str(output)]) == 0
    return output, written, console.getvalue()


def test_the_command_reads_the_games_beside_the_metrics_file(report) -> None:
    output, written, console = report
    recorded = sum(len(records) for records in written.values())
    assert recorded == STEPS * GAMES_PER_STEP
    assert f"read {recorded} games of {STEPS} steps from " in console
    assert f"report.md and {output / 'report.html'}" in console


def test_the_page_is_self_contained(report) -> None:
    output, _, _ = report
    html = (output / "report.html").read_text()
    page = Page(html)
    assert not page.tags("script") and not page.tags("link") and not page.tags("iframe")
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", html)
    images = page.tags("img")
    assert len(images) == len(list(output.glob("*.png"))) >= 10
    for image in images:
        assert image["src"].startswith("data:image/png;base64,")
        assert base64.b64decode(image["src"].split(",", 1)[1]).startswith(b"\x89PNG")


def test_every_recorded_game_is_on_the_page_with_its_texts(report) -> None:
    output, written, _ = report
    page = Page((output / "report.html").read_text())
    games = [attrs for attrs in page.tags("article") if attrs.get("class") == "game"]
    assert len(games) == sum(len(records) for records in written.values())
    assert {attrs["id"] for attrs in page.tags("details")} == {f"step-{step}" for step in written}
    for records in written.values():
        for record in records:
            assert f"note {record.outcome.note_id}" in page.text
            assert record.assessor_response in page.text
            if record.rewrite is None:  # a vanilla game's note as is; a rewrite's diff: the next test
                assert record.note in page.text


def test_model_and_data_text_is_shown_as_text(report) -> None:
    output, written, _ = report
    html = (output / "report.html").read_text()
    assert any(SCRIPT in record.note for record in written[1])
    assert SCRIPT not in html and escape(SCRIPT) in html  # the note's <script> is text on the page
    assert SCRIPT in Page(html).text
    assert "Checked the &lt;b&gt;doses&lt;/b&gt;." in html  # an assessor response with markup


def test_the_rewrites_change_is_highlighted(report) -> None:
    output, written, _ = report
    html = (output / "report.html").read_text()
    rewritten = [r for records in written.values() for r in records if r.rewrite is not None and r.rewrite != r.note]
    assert rewritten, "no game changed its note"
    for record in rewritten:
        assert word_diff(record.note, record.rewrite) in html
    assert html.count("<del>") >= len(rewritten) and html.count("<ins>") >= len(rewritten)


def test_word_diff_marks_words_and_escapes() -> None:
    assert word_diff("Give 5 mg daily.", "Give 50 mg daily.") == "Give <del>5</del><ins>50</ins> mg daily."
    assert word_diff("a <b> c", "a <i> c d") == "a <del>&lt;b&gt;</del><ins>&lt;i&gt;</ins> c<ins> d</ins>"
    assert word_diff("same\n  text", "same\n  text") == "same\n  text"


def test_a_run_without_game_records_says_so(report, tmp_path: Path, capsys) -> None:
    output, _, _ = report
    metrics_file = output.parent / "checkpoints" / "metrics.jsonl"
    empty = tmp_path / "no-games"
    assert main(["report", "--metrics", str(metrics_file), "--output", str(tmp_path), "--games", str(empty)]) == 0
    assert f"no game records in {empty}" in capsys.readouterr().out
    page = Page((tmp_path / "report.html").read_text())
    assert "No game records in that folder" in page.text and not page.tags("article")


def test_a_malformed_game_record_is_one_clear_line(report, tmp_path: Path, capsys) -> None:
    output, _, _ = report
    metrics_file = output.parent / "checkpoints" / "metrics.jsonl"
    games = tmp_path / "games"
    games.mkdir()
    step_file(games, 2).write_text('{"step": 2}\n')
    assert main(["report", "--metrics", str(metrics_file), "--output", str(tmp_path), "--games", str(games)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("medplay report: error: games/step_2.jsonl:row 1: field ")
    assert "Traceback" not in err
