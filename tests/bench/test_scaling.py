"""`medplay bench scaling`'s fits and picture (`make bench-scaling`, medical_team/bench/scaling.py), without a run.

The runs themselves are the real trainer's (the `long` tests/e2e/test_bench_cpu.py runs `make bench`'s pair);
here the least squares must give back the costs a step was made of, a step that grows faster than linearly must
show in its marginal costs, and the picture must be drawn from a result shaped as the benchmark writes it.
Run: PYTHONPATH=$PWD:tests .venv/bin/python -m pytest -q tests/bench/test_scaling.py
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from medical_team.bench import scaling
from medical_team.cli import main

GAMES = (4, 16, 64)
CAPS = (32, 128)


def step_s(kind: str, games: int, cap: int) -> float:
    """A made step: 0.8 s fixed, 0.05 s a game and 0.4 ms a game per token of the cap (stock: half of each)."""
    scale = 1.0 if kind == "selfplay" else 0.5
    return scale * (0.8 + games * (0.05 + 0.0004 * cap))


def point(kind: str, games: int, cap: int) -> dict:
    """One point as `measure` records it (phases: gen grows with the games, the weight sync does not)."""
    phases = {phase: None for phase in scaling.PHASES} | {"outside_phases": 0.1}
    phases |= {"gen": 0.02 * games, "update_weights": 0.06}
    return {"kind": kind, "games": games, "cap": cap, "step_s": step_s(kind, games, cap), "phase_s": phases}


POINTS = [point(kind, games, cap) for kind in scaling.KINDS for cap in CAPS for games in GAMES]


def test_the_fits_give_back_the_fixed_cost_and_the_cost_per_game() -> None:
    fits = scaling.fits(POINTS)
    for kind, scale in (("selfplay", 1.0), ("stock", 0.5)):
        for cap in CAPS:
            step = fits[kind]["per_cap"][str(cap)]["step"]
            assert step["fixed_s"] == pytest.approx(0.8 * scale, abs=1e-4)
            assert step["per_game_s"] == pytest.approx(scale * (0.05 + 0.0004 * cap), abs=1e-5)
            assert step["r2"] == pytest.approx(1.0)
            phases = fits[kind]["per_cap"][str(cap)]["phases"]
            assert phases["gen"]["per_game_s"] == pytest.approx(0.02) and phases["gen"]["fixed_s"] == pytest.approx(0)
            assert phases["update_weights"]["per_game_s"] == pytest.approx(0) and phases["reward"]["fixed_s"] is None
        joint = fits[kind]["joint"]
        assert joint["fixed_s"] == pytest.approx(0.8 * scale, abs=1e-4)
        assert joint["per_game_s"] == pytest.approx(0.05 * scale, abs=1e-5)
        assert joint["per_game_token_s"] == pytest.approx(0.0004 * scale)


def test_a_step_growing_faster_than_linearly_shows_in_its_marginal_costs() -> None:
    games = [4, 16, 64]
    linear = scaling.marginal_per_game(games, [1.0 + 0.1 * g for g in games])
    quadratic = scaling.marginal_per_game(games, [1.0 + 0.01 * g * g for g in games])
    assert linear == pytest.approx([0.1, 0.1])
    assert quadratic[1] > 3 * quadratic[0]
    assert scaling.line_fit([4, 4], [1.0, 1.1])["per_game_s"] is None  # one size: no line


def test_the_picture_is_drawn_from_a_result_with_a_failed_point(tmp_path: Path) -> None:
    failed = {**point("stock", 64, 128), "step_s": None, "phase_s": dict.fromkeys((*scaling.PHASES, "outside_phases"))}
    points = [*POINTS[:-1], failed]
    report = {"caps": list(CAPS), "points": points, "fits": scaling.fits(points)}
    assert report["fits"]["stock"]["per_cap"]["128"]["step"]["fixed_s"] == pytest.approx(0.4, abs=1e-4)
    png = tmp_path / "scaling.png"
    scaling.plot_scaling(report, png)
    with Image.open(png) as image:
        assert image.format == "PNG" and image.width > 1000 and image.height > 300
        assert sum(1 for count in image.convert("L").histogram() if count) > 10  # lines and text, not blank


def test_games_that_are_no_multiple_of_the_mini_batch_are_refused_before_any_run(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "scaling", "--games", "4", "6", "--caps", "32"])
    assert "multiple of cpu-smoke's ppo_mini_batch_size, 4" in capsys.readouterr().err


def test_steps_no_more_than_the_warm_up_are_refused_before_any_run(capsys) -> None:
    assert main(["bench", "scaling", "--steps", "1", "--skip", "1"]) == 2
    assert "--steps 1: must be more than --skip (1)" in capsys.readouterr().err
