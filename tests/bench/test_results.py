"""How a benchmark writes its result (medical_team/bench/results.py) and prints its table (table.py): the JSON with
its provenance first, the table with the same provenance and the files written, the exit status from the target.

Run: .venv/bin/python -m pytest -q tests/bench/test_results.py
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medical_team.bench.results import write_json, write_result
from medical_team.bench.table import cell, markdown_table


def test_the_json_opens_with_its_provenance(tmp_path: Path) -> None:
    output = tmp_path / "deep" / "bench.json"
    facts = write_json(output, {"figure": 1.5})
    written = json.loads(output.read_text())
    assert list(written) == ["provenance", "figure"] and written["provenance"] == facts
    write_json(output, {"figure": 1.5}, indent=None)
    assert output.read_text().count("\n") == 1  # one compact line (the soak's thousands of samples)


@pytest.mark.parametrize(("meets", "status"), [(True, 0), (False, 1)])
def test_the_table_names_the_figures_the_provenance_and_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], meets: bool, status: int
) -> None:
    output = tmp_path / "bench.json"
    assert write_result(output, {"meets_target": meets}, "a benchmark", [("seconds", 0.123456)]) == status
    out = capsys.readouterr().out
    facts = json.loads(output.read_text())["provenance"]
    assert "a benchmark" in out and "| seconds | 0.1235 |" in out and f"| meets its target | {meets} |" in out
    assert f"measured on: {facts['device']}; {facts['date']}; {facts['commit']}" in out and f"wrote {output}" in out


def test_cells_and_a_markdown_table() -> None:
    assert [cell(None), cell(2.0 / 3), cell(12), cell("x")] == ["n/a", "0.6667", "12", "x"]
    assert [cell(15178.4), cell(1234.56)] == ["15178", "1235"]
    assert markdown_table(("a", "b"), [(1, None)]) == "| a | b |\n|---|---|\n| 1 | n/a |"
