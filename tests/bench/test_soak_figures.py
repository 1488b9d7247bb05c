"""`medplay bench soak`'s per-step CPU time (soak.py) and per-step figures (soak_figures.py), without a training.

The soak's run is the real trainer's (the `long` tests/e2e/test_soak_cpu.py runs the whole soak); here a real process
burns known work between two logged steps, and made per-step figures must give back their medians with each run's
first step (its start-up) left out.
Run: PYTHONPATH=$PWD:tests .venv/bin/python -m pytest -q tests/bench/test_soak_figures.py
"""

from __future__ import annotations

import json
import subprocess
import sys

from medical_team.bench import soak
from medical_team.bench import soak_figures as report
from medical_team.cli import build_parser

# A process that does a fixed amount of work (~0.5 CPU s) for each line it reads, then says so.
WORKER = "import sys\nfor _ in sys.stdin:\n    sum(range(30_000_000))\n    print('done', flush=True)\n"


def test_a_steps_cpu_seconds_are_the_work_done_between_its_mark_and_the_previous_one() -> None:
    worker = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert worker.stdin is not None and worker.stdout is not None
    recorded: dict[int, float] = {}
    step_cpu = soak.StepCpu()
    try:
        step_cpu.mark(worker.pid, 0, 1, recorded)  # the first step after a start: nothing to measure it from
        assert recorded == {}
        worker.stdin.write("work\n")
        worker.stdin.flush()
        assert worker.stdout.readline().strip() == "done"
        step_cpu.mark(worker.pid, 1, 2, recorded)
        assert list(recorded) == [2] and recorded[2] >= 0.1
        step_cpu.mark(worker.pid, 2, 3, recorded)  # no work in between
        assert recorded[3] < 0.05
        step_cpu.mark(worker.pid, 3, 5, recorded)  # two steps at once: which of them did the work is unknown
        assert 4 not in recorded and 5 not in recorded
    finally:
        worker.kill()
        worker.wait()


def test_each_runs_first_step_is_left_out_of_the_tenths() -> None:
    # two runs of 100 steps: killed after step 60, resumed from 50; every step costs 2 s but the two first steps
    values = {step: 2.0 for step in range(2, 101)} | {1: 50.0, 51: 40.0}
    figure = report.per_step(values, [{"resumed_from": None}, {"resumed_from": 50}], 100)
    assert figure["first_tenth_median_s"] == 2.0 and figure["last_tenth_median_s"] == 2.0
    assert figure["change_percent"] == 0.0 and figure["slope_s_per_100_steps"] == 0.0


def test_a_step_that_costs_more_late_shows_in_the_last_tenth() -> None:
    values = {step: 2.0 if step <= 80 else 2.5 for step in range(1, 101)}
    figure = report.per_step(values, [{"resumed_from": None}], 100)
    assert figure["first_tenth_median_s"] == 2.0 and figure["last_tenth_median_s"] == 2.5
    assert figure["change_percent"] == 25.0 and figure["slope_s_per_100_steps"] > 0


def test_no_steps_in_a_tenth_give_no_figure() -> None:
    assert report.per_step({step: 2.0 for step in range(1, 50)}, [{"resumed_from": None}], 100) == {}


def test_the_soaks_settings_are_its_own_options_as_json() -> None:
    args = build_parser("bench").parse_args(["bench", "soak", "--steps", "60", "--override", "a=1"])
    settings = soak.own_settings(args)
    assert settings["steps"] == 60 and settings["override"] == ["a=1"] and settings["work"] == "build/soak"
    assert not {"command", "bench", "run"} & set(settings)
    json.dumps(settings)
