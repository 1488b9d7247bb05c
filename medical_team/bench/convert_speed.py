"""Benchmark of `medplay convert` on the bundled MEDEC files (target: under 5 s); writes a JSON result.

Run: medplay bench convert [--repeats 5] [--output build/bench/convert.json]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from medical_team.bench.commands import medplay_script
from medical_team.bench.results import machine, write_result
from medical_team.data.medec import TEST_CSV, VALIDATION_CSV, bundled_csv

TARGET_S = 5.0


def time_in_process(output: Path) -> float:
    """Seconds for one `convert_medec` call (libraries already imported)."""
    from medical_team.game.dataset import ConvertOptions, convert_medec

    start = time.perf_counter()
    convert_medec([bundled_csv(VALIDATION_CSV)], bundled_csv(TEST_CSV), output, ConvertOptions())
    return time.perf_counter() - start


def time_command(output: Path) -> float:
    """Seconds for a whole `medplay convert` process, interpreter start and imports included."""
    start = time.perf_counter()
    subprocess.run(medplay_script("convert", "--output", str(output)), check=True, capture_output=True)
    return time.perf_counter() - start


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`medplay bench convert`'s options."""
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each way (default 5)")
    parser.add_argument("--output", type=Path, default=Path("build/bench/convert.json"), help="result file")


def run(args: argparse.Namespace) -> int:
    """Time both ways `--repeats` times and write the JSON result; 0 when the command meets its target."""
    with tempfile.TemporaryDirectory() as folder:
        in_process = [time_in_process(Path(folder) / f"in-{k}") for k in range(args.repeats)]
        command = [time_command(Path(folder) / f"cmd-{k}") for k in range(args.repeats)]
    result = {
        "benchmark": "medplay convert (bundled MEDEC-MS validation + test files)",
        "target_s": TARGET_S,
        "repeats": args.repeats,
        "in_process_s": {"min": min(in_process), "median": statistics.median(in_process), "max": max(in_process)},
        "command_s": {"min": min(command), "median": statistics.median(command), "max": max(command)},
        "meets_target": statistics.median(command) < TARGET_S,
        "machine": machine(),
    }
    rows = [
        ("convert_medec in this process, median s", result["in_process_s"]["median"]),
        ("`medplay convert` process, median s", result["command_s"]["median"]),
        ("target (under) s", TARGET_S),
    ]
    return write_result(args.output, result, "`medplay convert` of the bundled MEDEC files", rows)

