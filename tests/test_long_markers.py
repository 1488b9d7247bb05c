"""tests/long_markers.py: a `long` test without `e2e` or `slow` fails its file's collection, whatever `-m` selects."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
FILES = {
    "test_misfiled.py": """
import pytest


@pytest.mark.long
@pytest.mark.slow
def test_long_and_slow():
    pass


@pytest.mark.parametrize("case", ["short", pytest.param("long", marks=pytest.mark.long)])
def test_parametrized(case):
    pass
""",
    "test_misfiled_class.py": """
import pytest


@pytest.mark.long
class TestAlone:
    def test_in_a_class(self):
        pass
""",
    "test_filed.py": """
import pytest

pytestmark = pytest.mark.e2e


@pytest.mark.long
def test_long_and_e2e():
    pass


def test_short():
    pass
""",
}
MISFILED = "marked long but neither e2e nor slow (docs/testing.md)"


def run_pytest(folder: Path) -> subprocess.CompletedProcess[str]:
    """pytest with the plugin on `folder`, the `long` tests deselected as CI's gate does."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "long_markers", "-m", "not long"],
        cwd=folder,
        env={"PYTHONPATH": str(TESTS), "PATH": "/usr/bin:/bin", "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_long_test_outside_e2e_and_slow_fails_its_files_collection(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    long: x\n    e2e: x\n    slow: x\n")
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    result = run_pytest(tmp_path)
    errors = sorted(line for line in result.stdout.splitlines() if line.startswith("ERROR "))
    assert result.returncode == 2 and errors == [
        f"ERROR test_misfiled.py - {MISFILED}: test_parametrized[long]",
        f"ERROR test_misfiled_class.py::TestAlone - {MISFILED}: test_in_a_class",
    ], result.stdout[-3000:] + result.stderr[-3000:]
    (tmp_path / "test_misfiled.py").unlink()
    (tmp_path / "test_misfiled_class.py").unlink()
    result = run_pytest(tmp_path)
    assert result.returncode == 0 and "1 passed, 1 deselected" in result.stdout, result.stdout[-3000:]
