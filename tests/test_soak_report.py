"""scripts/soak_report.py's CPU time per step (`make soak`), without a training run.

The soak's run is the real trainer's (the `long` tests/e2e/test_soak_cpu.py runs the whole script); here the samples
are made, so that the figure must give back the CPU a step was made to cost: each run's first step and its teardown
left out, a process counted only between two samples that both hold it, the runs between kills summed.
Run: PYTHONPATH=$PWD:tests .venv/bin/python -m pytest -q tests/test_soak_report.py
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_report():
    """scripts/soak_report.py as soak.py imports it."""
    spec = importlib.util.spec_from_file_location("soak_report", SCRIPTS / "soak_report.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["soak_report"] = module
    spec.loader.exec_module(module)
    return module


report = load_report()
STEPS = 200
KILLED_AFTER = 120  # the first run is killed after this step and the second resumes from 100


def made_samples(cpu_per_step: float, late_cpu_per_step: float) -> tuple[list[dict], list[dict]]:
    """A sample at every step of two runs, two processes each; from step 150 on each step costs `late_cpu_per_step`.

    Each run's start-up (step 0 or its resume step, then its first step) costs 50 CPU s more, which the figure must
    leave out; a process that starts in the second run's middle brings its own start-up's 30 s, never counted.
    """
    samples: list[dict] = []
    for segment, (start, end) in enumerate(((0, KILLED_AFTER), (100, STEPS))):
        cpu = 50.0  # the start-up
        for step in range(start, end + 1):
            if step > start + 1:
                cpu += late_cpu_per_step if step > 150 else cpu_per_step
            processes = [
                {"pid": 10 * segment + 1, "cpu_s": cpu * 0.75},
                {"pid": 10 * segment + 2, "cpu_s": cpu * 0.25},
            ]
            if segment == 1 and step >= 150:
                processes.append({"pid": 99, "cpu_s": 30.0})  # idle since its start: no CPU of a step
            samples.append({"segment": segment, "step": step, "processes": processes})
    segments = [{"resumed_from": None}, {"resumed_from": 100}]
    return samples, segments


def test_a_steady_run_costs_the_same_cpu_per_step_in_its_first_and_last_tenth() -> None:
    samples, segments = made_samples(2.0, 2.0)
    figure = report.cpu_time(samples, segments, STEPS)
    assert figure["first_tenth_cpu_s_per_step"] == 2.0 and figure["last_tenth_cpu_s_per_step"] == 2.0
    assert figure["change_percent"] == 0.0
    assert {value for _, value in figure["per_window"]} == {2.0}


def test_a_step_that_costs_more_late_shows_in_the_last_tenth_and_its_windows() -> None:
    samples, segments = made_samples(2.0, 2.5)
    figure = report.cpu_time(samples, segments, STEPS)
    assert figure["first_tenth_cpu_s_per_step"] == 2.0 and figure["last_tenth_cpu_s_per_step"] == 2.5
    assert figure["change_percent"] == 25.0
    windows = dict(figure["per_window"])
    assert windows[0] == windows[100] == 2.0 and windows[175] == 2.5


def test_no_samples_in_a_range_give_no_figure() -> None:
    samples, segments = made_samples(2.0, 2.0)
    assert report.cpu_seconds_per_step(samples, segments, STEPS + 1, STEPS + 50) is None
