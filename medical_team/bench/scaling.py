"""Benchmark: a training step's cost against the work, medplay's self-play step beside verl's stock step, on the CPU.

    medplay bench scaling             # `make bench-scaling`: games 4 16 64 x caps 32 128, 4 steps
    medplay bench scaling --games 4 8 --caps 32 --steps 3   # a quick check of the plumbing

Every point is two fresh runs of the real verl trainer on the cpu-smoke profile (the tiny random Qwen3, the rules
judge; the data and model `medplay bench step` prepares): the self-play step, then verl's stock single-turn GRPO step
(stock_step.py's STOCK_OVERRIDES), at `data.train_batch_size` = games per step and
`data.max_response_length` = `actor_rollout_ref.rollout.response_length` = the response cap; the rest is cpu-smoke
as shipped (mini-batches of 4 games, so a step of 64 games makes 16 optimizer updates; vLLM decodes 16 sequences
at once). Figures are medians over the steps after the first (`--skip 1`; verl's `timing_s/step` and `/<phase>`).
For each kind and cap a least-squares line, step = fixed + per_game x games (and one per phase), the marginal
cost per game between consecutive sizes (rising: the step grows faster than linearly), and for each kind one fit
over every point, step = fixed + games x (per_game + per_game_token x cap). Writes JSON and a PNG.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

from medical_team.bench.metric_medians import PHASES
from medical_team.bench.results import write_json
from medical_team.bench.stock_step import STOCK_OVERRIDES
from medical_team.bench.table import print_result
from medical_team.bench.training_runs import add_run_arguments, cpu_smoke_overrides, prepare, train_run
from medical_team.common.errors import UserInputError
from medical_team.reliability.resources import line

KINDS: dict[str, tuple[str, ...]] = {"selfplay": (), "stock": STOCK_OVERRIDES}
GAMES = (4, 16, 64)
CAPS = (32, 128)
# cpu-smoke's actor.ppo_mini_batch_size: verl refuses a batch of games that is not a multiple of it.
MINI_BATCH = 4


def size_overrides(games: int, cap: int) -> tuple[str, ...]:
    """The overrides of one point: games per step and the response cap, for the data and the rollout alike."""
    return (
        f"data.train_batch_size={games}",
        f"data.max_response_length={cap}",
        f"actor_rollout_ref.rollout.response_length={cap}",
    )


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    """One self-play and one stock run at every (cap, games), alternating; each point's medians and its run."""
    work = args.work.resolve()
    data, model = prepare(work)
    common = cpu_smoke_overrides(data, model, args.steps)
    points = []
    for cap in args.caps:
        for games in args.games:
            for kind, extra in KINDS.items():
                name = f"scaling_{kind}_g{games}_c{cap}"
                overrides = (*extra, *size_overrides(games, cap))
                run = train_run(name, work, common, overrides, args.timeout, args.skip)
                failed = []
                if run["returncode"] != 0:
                    # Once more: on a loaded machine Ray's start can time out (its log stays, named in `failed`).
                    failed.append(run)
                    run = train_run(f"{name}_again", work, common, overrides, args.timeout, args.skip)
                point = {"kind": kind, "games": games, "cap": cap, **point_figures(run), "run": run, "failed": failed}
                points.append(point)
                print(f"{name}: step {point['step_s']} s", flush=True)
    return points


def point_figures(run: dict[str, Any]) -> dict[str, Any]:
    """A run's step and phase medians (None where it failed)."""
    phases = run.get("phase_s") or {}
    return {
        "step_s": run.get("step_s"),
        "phase_s": {phase: phases.get(phase) for phase in PHASES} | {"outside_phases": run.get("outside_phases_s")},
        "response_length_mean": run.get("response_length_mean"),
        "steps_measured": run.get("steps_measured"),
    }


def line_fit(games: list[int], seconds: list[float]) -> dict[str, Any]:
    """Least squares of seconds = fixed + per_game x games, its R² and residuals; None figures below two sizes."""
    import numpy as np

    if len(set(games)) < 2:
        return {"fixed_s": None, "per_game_s": None, "r2": None, "residuals_s": None}
    per_game, fixed = line(games, seconds)
    x, y = np.asarray(games, dtype=float), np.asarray(seconds, dtype=float)
    residuals = y - (fixed + per_game * x)
    spread = float(((y - y.mean()) ** 2).sum())
    return {
        "fixed_s": round(float(fixed), 4),
        "per_game_s": round(float(per_game), 5),
        "r2": round(1.0 - float((residuals**2).sum()) / spread, 4) if spread > 0 else None,
        "residuals_s": [round(float(r), 4) for r in residuals],
    }


def marginal_per_game(games: list[int], seconds: list[float]) -> list[float]:
    """Seconds per added game between consecutive sizes: a rising list is a step growing faster than linearly."""
    pairs = sorted(zip(games, seconds))
    return [round((t2 - t1) / (g2 - g1), 5) for (g1, t1), (g2, t2) in pairwise(pairs) if g2 != g1]


def joint_fit(points: list[dict[str, Any]]) -> dict[str, Any]:
    """Least squares over every cap of one kind: step = fixed + games x (per_game + per_game_token x cap)."""
    import numpy as np

    usable = [p for p in points if p["step_s"] is not None]
    if len({p["games"] for p in usable}) < 2 or len({p["cap"] for p in usable}) < 2:
        return {"fixed_s": None, "per_game_s": None, "per_game_token_s": None, "why": "needs two sizes and two caps"}
    games = np.array([p["games"] for p in usable], dtype=float)
    caps = np.array([p["cap"] for p in usable], dtype=float)
    design = np.column_stack([np.ones_like(games), games, games * caps])
    (fixed, per_game, per_token), *_ = np.linalg.lstsq(design, np.array([p["step_s"] for p in usable]), rcond=None)
    return {
        "fixed_s": round(float(fixed), 4),
        "per_game_s": round(float(per_game), 5),
        "per_game_token_s": float(per_token),
    }


def fits(points: list[dict[str, Any]]) -> dict[str, Any]:
    """Per kind: per cap the step's and each phase's line and the marginal costs; over every cap, the joint fit."""
    result: dict[str, Any] = {}
    for kind in KINDS:
        mine = [p for p in points if p["kind"] == kind]
        per_cap = {}
        for cap in sorted({p["cap"] for p in mine}):
            usable = [p for p in mine if p["cap"] == cap and p["step_s"] is not None]
            games = [p["games"] for p in usable]
            per_cap[str(cap)] = {
                "step": line_fit(games, [p["step_s"] for p in usable]),
                "marginal_step_s_per_game": marginal_per_game(games, [p["step_s"] for p in usable]),
                "phases": {phase: line_fit(*_present(usable, phase)) for phase in (*PHASES, "outside_phases")},
            }
        result[kind] = {"per_cap": per_cap, "joint": joint_fit(mine)}
    return result


def _present(points: list[dict[str, Any]], phase: str) -> tuple[list[int], list[float]]:
    """(games, seconds) of the points that logged the phase (verl's stock step has `reward`, self-play has not)."""
    kept = [(p["games"], p["phase_s"][phase]) for p in points if p["phase_s"].get(phase) is not None]
    return [g for g, _ in kept], [s for _, s in kept]


def plot_scaling(report: dict[str, Any], path: Path) -> None:
    """Step seconds against games (measured and fitted lines, per kind and cap), then each kind's phases at the
    largest cap; in medplay's report style (medical_team/evaluate/plots.py)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    points = [p for p in report["points"] if p["step_s"] is not None]
    top = max(report["caps"])
    figure, axes = plt.subplots(1, 1 + len(KINDS), figsize=(7 * (1 + len(KINDS)), 4.5), dpi=100)
    try:
        for color, kind in enumerate(KINDS):
            for style, cap in zip(("-", "--", ":", "-."), sorted(report["caps"])):
                mine = sorted((p["games"], p["step_s"]) for p in points if p["kind"] == kind and p["cap"] == cap)
                if not mine:
                    continue
                games = [g for g, _ in mine]
                fit = report["fits"][kind]["per_cap"][str(cap)]["step"]
                label = f"{kind}, cap {cap}"
                if fit["fixed_s"] is not None:
                    ends = [min(games), max(games)]
                    line = [fit["fixed_s"] + fit["per_game_s"] * g for g in ends]
                    axes[0].plot(ends, line, style, color=f"C{color}")
                    label += f": {fit['fixed_s']:.2f} s + {fit['per_game_s']:.3f} s/game"
                axes[0].plot(games, [s for _, s in mine], "o", color=f"C{color}", markersize=4, label=label)
        axes[0].set_title("Step time against games per step (medians; lines: least squares)")
        axes[0].set_ylabel("seconds per step")
        for axis, kind in zip(axes[1:], KINDS):
            mine = sorted((p for p in points if p["kind"] == kind and p["cap"] == top), key=lambda p: p["games"])
            for phase in (*PHASES, "outside_phases"):
                shown = [(p["games"], p["phase_s"][phase]) for p in mine if p["phase_s"].get(phase) is not None]
                if shown:
                    axis.plot(*zip(*shown), marker="o", markersize=3, label=phase)
            axis.set_title(f"{kind} step's phases at cap {top} (verl timers)")
            axis.set_ylabel("seconds")
        for axis in axes:
            axis.set_xlabel("games per step")
            axis.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
            axis.grid(alpha=0.3)
            if axis.get_legend_handles_labels()[0]:
                axis.legend(fontsize="small", loc="best")
        figure.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, format="png")
    finally:
        plt.close(figure)


def games_per_step(text: str) -> int:
    """A --games value: verl refuses a batch of games that is not a multiple of cpu-smoke's mini-batch."""
    games = int(text)
    if games % MINI_BATCH or games < MINI_BATCH:
        raise argparse.ArgumentTypeError(f"each must be a multiple of cpu-smoke's ppo_mini_batch_size, {MINI_BATCH}")
    return games


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`medplay bench scaling`'s options."""
    add_run_arguments(parser, Path("build/bench_scaling.json"), steps=4, skip=1)
    parser.add_argument(
        "--games", type=games_per_step, nargs="+", default=list(GAMES), help="games per step (default 4 16 64)"
    )
    parser.add_argument("--caps", type=int, nargs="+", default=list(CAPS), help="response caps (default 32 128)")
    parser.add_argument("--plot", type=Path, help="the PNG (default: the result file's, .png)")


def run(args: argparse.Namespace) -> int:
    """Measure every point, fit, and write the JSON and the PNG; 0 when every run finished."""
    from medical_team.run.stack import stack_versions

    if args.steps <= args.skip:
        raise UserInputError(f"--steps {args.steps}: must be more than --skip ({args.skip}), the warm-up steps")
    started = time.time()
    points = measure(args)
    report = {
        "what": "step seconds against games per step and the response cap, self-play and verl's stock step, cpu-smoke",
        "method": __doc__.split("\n\n")[2].replace("\n", " "),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
        "wall_s": round(time.time() - started),
        "host": {"platform": platform.platform(), "cpus": os.cpu_count(), "load_average_end": os.getloadavg()},
        "versions": stack_versions(),
        "steps": args.steps,
        "games": args.games,
        "caps": args.caps,
        "fits": fits(points),
        "points": points,
    }
    plot = args.plot or args.output.with_suffix(".png")
    facts = write_json(args.output, report)
    plot_scaling(report, plot)
    rows = [
        (kind, joint["fixed_s"], joint["per_game_s"], joint["per_game_token_s"])
        for kind, joint in ((kind, fit["joint"]) for kind, fit in report["fits"].items())
    ]
    header = ("step", "fixed s", "s per game", "s per game-token")
    print_result("a step's cost against the work (one fit over every point)", rows, facts, [args.output, plot], header)
    return 0 if all(point["run"]["returncode"] == 0 for point in points) else 1
