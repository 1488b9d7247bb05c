"""report.html in a real headless browser (Debian's `chromium`): the DOM the browser built holds every recorded
game, the `<script>` in a note stayed text and nothing ran, and a screenshot of the page goes to
docs/report-screenshot.png.

    apt-get install -y chromium
    PYTHONPATH=tests .venv/bin/python -m pytest -q -m long tests/evaluate/test_report_browser.py

Skipped when no `chromium` is on PATH (the appliance's image has none: the report is a file to open anywhere), except
under `make test-all`, which installs it first (Makefile, `browser`) and sets MEDPLAY_REQUIRE_BROWSER.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from report_run import SCRIPT, Page, write_run

from medical_team.cli import main

pytestmark = [pytest.mark.long, pytest.mark.slow]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "report-screenshot.png"
WINDOW = "1280,2300"  # the curves and the first recorded game
BROWSER_TIMEOUT_S = 180
# Set by `make test-all` (which installs chromium first): a missing browser fails these tests instead of skipping them.
REQUIRE_BROWSER_ENV = "MEDPLAY_REQUIRE_BROWSER"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """report.html of a three-step run, and the records the run wrote."""
    if CHROMIUM is None:
        missing = "no chromium on PATH: `apt-get install -y chromium` to open the report in a real browser"
        if os.environ.get(REQUIRE_BROWSER_ENV):
            pytest.fail(f"{missing} ({REQUIRE_BROWSER_ENV} is set: `make test-all` runs every test)")
        pytest.skip(missing)
    root = tmp_path_factory.mktemp("run")
    _, written = write_run(root)
    # paths relative to the run folder, so that the page (and the screenshot in docs/) is the same in every run
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(io.StringIO()):
        patch.chdir(root)
        assert main(["report", "--metrics", "checkpoints/metrics.jsonl", "--output", "report"]) == 0
    return root / "report" / "report.html", written


def browse(page: Path, *flags: str, profile: Path) -> subprocess.CompletedProcess[str]:
    """Run headless chromium on `page` with `flags`; its console messages go to stderr (`INFO:CONSOLE` lines)."""
    command = [
        CHROMIUM,
        "--headless",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        *(["--no-sandbox"] if os.geteuid() == 0 else []),  # chromium's sandbox refuses to run as root
        *flags,
        page.as_uri(),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=BROWSER_TIMEOUT_S, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_the_browsers_dom_shows_every_game_and_runs_nothing(page, tmp_path: Path) -> None:
    html, written = page
    result = browse(html, "--dump-dom", profile=tmp_path / "profile")
    dom = Page(result.stdout)
    assert not dom.tags("script")
    assert "<title>medplay training report</title>" in result.stdout  # the note's script would have retitled it
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    assert not console, console  # no script error, no message of any script
    games = [attrs for attrs in dom.tags("article") if attrs.get("class") == "game"]
    assert len(games) == sum(len(records) for records in written.values())
    for records in written.values():
        for record in records:
            assert f"note {record.outcome.note_id}" in dom.text
            assert record.assessor_response in dom.text
    assert SCRIPT in dom.text  # shown as text
    assert len(dom.tags("del")) >= 1 and len(dom.tags("ins")) >= 1
    assert all(image["src"].startswith("data:image/png;base64,") for image in dom.tags("img"))


def test_a_screenshot_of_the_page_goes_to_the_docs(page, tmp_path: Path) -> None:
    from PIL import Image

    html, _ = page
    shot = tmp_path / "report.png"
    browse(html, f"--screenshot={shot}", f"--window-size={WINDOW}", profile=tmp_path / "profile")
    with Image.open(shot) as image:
        assert image.size == tuple(int(n) for n in WINDOW.split(","))
        colours = sum(1 for count in image.convert("L").histogram() if count)
        assert colours > 50  # text, plots and highlights, not a blank page
    SCREENSHOT.write_bytes(shot.read_bytes())
