"""`medplay bench startup` (`make bench-startup`) on a real process, without a training run.

The runs themselves are `medplay train`'s (the issue's figures in docs/benchmarks.md); here a real process that
burns CPU, then writes verl's ready line into a run log and a first metrics line, must be timed at both and its CPU
seconds summed under its role; the medians and ratios must be read from runs shaped as the benchmark records them.
Run: .venv/bin/python -m pytest -q tests/bench/test_startup.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from medical_team.bench import startup as bench


def test_a_start_is_timed_at_ready_and_step_1_and_its_cpu_summed_by_role(tmp_path: Path) -> None:
    program = (
        "import pathlib, time\n"
        f"folder = pathlib.Path({str(tmp_path)!r})\n"
        "def burn(seconds):\n"
        "    start = time.process_time()\n"
        "    while time.process_time() - start < seconds:\n"
        "        pass\n"
        "burn(0.5)\n"
        "(folder / 'logs').mkdir()\n"
        f"(folder / 'logs' / 'train-1.log').write_text('INFO {bench.READY_LINE}\\n')\n"
        "burn(0.3)\n"
        "(folder / 'checkpoints').mkdir()\n"
        "(folder / 'checkpoints' / 'metrics.jsonl').write_text('{\"step\": 1}\\n')\n"
        "time.sleep(2)\n"  # the files stay there for the sampler's next look
    )
    run = bench.StartRun("this", "medplay", 1)
    bench.measure(run, [sys.executable, "-c", program], bench.ROOT, tmp_path, 0.05, 120)
    assert run.returncode == 0 and run.processes == 1
    assert run.ready_s is not None and run.step1_s is not None and 0 < run.ready_s <= run.step1_s
    assert set(run.cpu_ready) == set(run.cpu_step1) == {"other"}  # a plain python process has no run role
    # sampled CPU never exceeds the kernel's account of the process (a sample is of the process while it ran)
    assert run.cpu_ready_s is not None and run.cpu_step1_s is not None
    assert run.cpu_ready_s <= run.cpu_step1_s <= run.exact_cpu_s + 0.1
    assert run.exact_cpu_s >= 0.8  # the kernel's account: both burns


def test_medians_and_ratios_are_read_per_tree_and_kind() -> None:
    runs = [
        bench.StartRun("this", "medplay", 1, 0, 90.0, 110.0, {"launcher": 10.0, "task_runner": 80.0}),
        bench.StartRun("this", "medplay", 2, 0, 100.0, 120.0, {"launcher": 12.0, "task_runner": 88.0}),
        bench.StartRun("old", "medplay", 1, 0, 190.0, 210.0, {"launcher": 20.0, "task_runner": 160.0}),
        bench.StartRun("old", "medplay", 2, 1),  # a failed run is left out
    ]
    table = bench.medians(runs)
    assert table["this/medplay"] == {"ready_s": 95.0, "step1_s": 115.0, "cpu_ready_s": 95.0, "cpu_step1_s": None,
                                     "runs": 2}  # fmt: skip
    assert table["old/medplay"]["runs"] == 1 and table["old/medplay"]["cpu_ready_s"] == 180.0
    assert bench.ratio(table["this/medplay"]["cpu_ready_s"], table["old/medplay"]["cpu_ready_s"]) == 0.528
    assert bench.ratio(None, 3.0) is None
    assert bench.by_role({(1, 0.0): bench.StartSample("launcher", 1.234), (2, 0.0): bench.StartSample("launcher", 2.0),
                          (3, 0.0): bench.StartSample("vllm_worker", 5.0)}) == {"vllm_worker": 5.0, "launcher": 3.23}  # fmt: skip
