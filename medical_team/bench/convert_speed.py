"""Benchmark of `medplay convert` on the bundled MEDEC files (target: under 5 s); writes a JSON result.

Run: .venv/bin/python scripts/bench_convert.py [--repeats 5] [--output build/bench/convert.json]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_result import machine, write_result

from medical_team.data.medec import TEST_CSV, VALIDATION_CSV, bundled_csv
from medical_team.game.dataset import ConvertOptions, convert_medec

TARGET_S = 5.0


def time_in_process(output: Path) -> float:
    """Seconds for one `convert_medec` call (libraries already imported)."""
    start = time.perf_counter()
    convert_medec([bundled_csv(VALIDATION_CSV)], bundled_csv(TEST_CSV), output, ConvertOptions())
    return time.perf_counter() - start


def time_command(output: Path) -> float:
    """Seconds for a whole `medplay convert` process, interpreter start and imports included."""
    medplay = Path(sys.executable).parent / "medplay"
    start = time.perf_counter()
    subprocess.run([str(medplay), "convert", "--output", str(output)], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    """Time both ways `--repeats` times and write the JSON result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", type=Path, default=Path("build/bench/convert.json"))
    args = parser.parse_args()
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
    return write_result(args.output, result)


if __name__ == "__main__":
    sys.exit(main())
