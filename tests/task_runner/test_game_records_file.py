"""The game records' writer: a step's file is replaced whole (a replayed step never doubles its records), and a
file that cannot be written ends the run with the step's old file intact.

The fault is real: a child process under a file-size limit (RLIMIT_FSIZE, as in test_metrics_file.py).

Run: PYTHONPATH=tests .venv/bin/python -m pytest -q tests/task_runner/test_game_records_file.py
"""

from __future__ import annotations

import dataclasses
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from report_run import EditingPolicy, step_seeds

from medical_team.game.batch import play_batch
from medical_team.game.game_records import read_game_records, records_text, step_file, step_records
from medical_team.judge.rules import RulesJudge
from medical_team.run.failures import MetricsWriteError
from medical_team.task_runner.game_records_file import write_step_records


@pytest.fixture(scope="module")
def records() -> list:
    """Every game of a step of twelve real games, as step 1's records."""
    batch = play_batch(step_seeds(2), EditingPolicy(), RulesJudge())
    traces = [game.trace(lambda turn: len(turn.response), 64) for game in batch.games]
    return step_records(1, [game.outcome for game in batch.games], traces, 100)


def test_a_step_written_again_replaces_its_records(records, tmp_path: Path) -> None:
    folder = tmp_path / "games"
    assert write_step_records(folder, 1, records) == step_file(folder, 1)
    step_2 = [dataclasses.replace(record, step=2) for record in records[:2]]
    write_step_records(folder, 2, step_2)
    write_step_records(folder, 1, records[:3])  # the step replayed after a resume
    assert read_game_records(folder) == {1: records[:3], 2: step_2}
    with pytest.raises(ValueError, match="records of step 1 given for step 3"):
        write_step_records(folder, 3, records)
    assert sorted(p.name for p in folder.iterdir()) == ["step_1.jsonl", "step_2.jsonl"]  # no temporary file left
    assert step_file(folder, 1).stat().st_mode & 0o777 == 0o644


def test_a_folder_that_cannot_be_made_ends_the_step_uncommitted(records, tmp_path: Path) -> None:
    folder = tmp_path / "games"
    folder.write_text("a file where the folder should be")
    with pytest.raises(MetricsWriteError, match=r"step 1's game records could not be written to .*step_1\.jsonl"):
        write_step_records(folder, 1, records)


CHILD = """
import sys
from pathlib import Path
from medical_team.game.game_records import read_game_records
from medical_team.task_runner.game_records_file import write_step_records
from medical_team.run.failures import MetricsWriteError

folder = Path(sys.argv[1])
records = read_game_records(folder)[1]
try:
    write_step_records(folder, 1, records * 20)
except MetricsWriteError as error:
    print(f"MetricsWriteError: {error}")
"""


def test_a_write_cut_short_by_a_file_size_limit_keeps_the_steps_old_records(records, tmp_path: Path) -> None:
    folder = tmp_path / "games"
    write_step_records(folder, 1, records)
    size = step_file(folder, 1).stat().st_size
    assert len(records_text(records * 20)) > 2 * size

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (2 * size, 2 * size))

    command = [sys.executable, "-c", CHILD, str(folder)]
    child = subprocess.run(command, check=False, preexec_fn=limit, capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr
    assert "MetricsWriteError: step 1's game records could not be written" in child.stdout
    assert "trainer.resume_mode=auto" in child.stdout
    assert read_game_records(folder) == {1: records}
    assert [p.name for p in folder.iterdir()] == ["step_1.jsonl"]
