"""What measures each benchmarked run, medical_team/bench/runs.py's `run_sampled`: the kernel's account of a process,
and a run that overruns its time.

Run: .venv/bin/python -m pytest -q tests/bench/test_runs.py
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from medical_team.bench.runs import run_sampled


def test_run_sampled_reads_the_kernels_account_of_the_process(tmp_path: Path) -> None:
    grow = "import sys; block = bytearray(300 * 2**20); sum(range(10**6)); print('done'); sys.exit(3)"
    run = run_sampled([sys.executable, "-c", grow], tmp_path / "run.log", timeout_s=120)
    assert run.returncode == 3 and (tmp_path / "run.log").read_text().strip() == "done"
    assert run.max_rss_mib >= 300 and run.cpu_s > 0, run


def test_run_sampled_stops_a_run_that_overruns_and_still_reports_it(tmp_path: Path) -> None:
    run = run_sampled(["sleep", "600"], tmp_path / "run.log", timeout_s=0.5)
    assert run.returncode == -signal.SIGTERM and run.max_rss_mib > 0, run
