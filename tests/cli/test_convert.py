"""`medplay convert` through argv and as a real process: outputs, the report table, and clear errors for broken CSVs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from medical_team.cli import main

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "csv"
EXPECTED = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))
MEDPLAY = Path(sys.executable).parent / "medplay"


def test_corpus_is_complete():
    files = sorted(path.name for path in CORPUS.glob("*.csv"))
    assert files == sorted(EXPECTED) and len(files) >= 12


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_broken_csv_exits_2_with_one_line_naming_file_row_and_field(name, tmp_path, capsys):
    status = main(["convert", "--input", str(CORPUS / name), "--output", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert status == 2
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    expected = EXPECTED[name]
    assert lines[0].startswith(f"medplay convert: error: {name}:row {expected['row']}: field '{expected['field']}': ")
    assert "Traceback" not in captured.err + captured.out
    assert not (tmp_path / "out" / "train.parquet").exists()


def test_broken_benchmark_file_is_reported_too(tmp_path, capsys):
    status = main(["convert", "--benchmark", str(CORPUS / "undecodable_byte.csv"), "--output", str(tmp_path)])
    assert status == 2
    assert "undecodable_byte.csv:row 3: field 'Text'" in capsys.readouterr().err


def test_benchmark_given_as_input_is_refused(tmp_path, capsys):
    from medical_team.data.medec import TEST_CSV, bundled_csv

    status = main(["convert", "--input", str(bundled_csv(TEST_CSV)), "--output", str(tmp_path)])
    assert status == 2
    assert "held out" in capsys.readouterr().err


def test_convert_prints_the_tables_and_writes_the_files(tmp_path, capsys):
    status = main(["convert", "--output", str(tmp_path), "--seed", "3", "--val-ratio", "0.2", "--benign-mode", "decoy"])
    out = capsys.readouterr().out
    assert status == 0
    for text in ("vanilla_harmful", "adversarial_benign", "causalOrganism", "328 empty row", "124 double-encoded"):
        assert text in out
    report = json.loads((tmp_path / "dataset_report.json").read_text(encoding="utf-8"))
    assert report["options"] == {
        "seed": 3,
        "val_ratio": 0.2,
        "include_clean_notes": False,
        "benign_mode": "decoy",
        "encoding": "utf-8",
    }
    assert report["files"]["val.parquet"] + report["files"]["train.parquet"] == 638


@pytest.mark.parametrize("ratio", ["0", "1", "abc", "-0.5"])
def test_bad_ratio_is_an_argument_error(ratio, tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["convert", "--output", str(tmp_path), "--val-ratio", ratio])
    assert caught.value.code == 2
    assert "--val-ratio" in capsys.readouterr().err


def test_real_process_converts_and_fails_cleanly(tmp_path):
    good = subprocess.run(
        [str(MEDPLAY), "convert", "--output", str(tmp_path / "good")],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert good.returncode == 0, good.stderr
    assert "Game seeds: 638" in good.stdout and "Traceback" not in good.stderr
    bad = subprocess.run(
        [
            str(MEDPLAY),
            "convert",
            "--input",
            str(CORPUS / "non_integer_error_flag.csv"),
            "--output",
            str(tmp_path / "bad"),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        "medplay convert: error: non_integer_error_flag.csv:row 3: field 'Error Flag': must be an integer, found 'yes'"
    )


def test_unusable_paths_are_user_errors(tmp_path, capsys):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    assert main(["convert", "--output", str(not_a_dir)]) == 2
    assert "field '--output': exists and is not a directory" in capsys.readouterr().err
    assert main(["convert", "--input", str(tmp_path / "absent.csv"), "--output", str(tmp_path / "out")]) == 2
    assert "absent.csv: field '--input': no such file" in capsys.readouterr().err


def test_negative_seed_is_an_argument_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["convert", "--output", str(tmp_path), "--seed", "-1"])
    assert caught.value.code == 2
    assert "--seed" in capsys.readouterr().err


def test_benchmark_notes_keeps_the_first_notes_that_eval_limit_scores(tmp_path):
    from medical_team.evaluate.benchmark import load_benchmark

    assert main(["convert", "--output", str(tmp_path), "--benchmark-notes", "5"]) == 0
    written = load_benchmark(tmp_path / "benchmark.parquet")
    assert [g.text_id for g in written.golds] == [g.text_id for g in load_benchmark(None).head(5).golds]
    assert json.loads((tmp_path / "dataset_report.json").read_text())["files"]["benchmark.parquet"] == 5


def test_benchmark_notes_below_one_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["convert", "--output", str(tmp_path), "--benchmark-notes", "0"])
    assert "--benchmark-notes" in capsys.readouterr().err
