"""What the GPU kit prints: a phase's table, and the steps and games a learning ladder's RL rungs trained."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from medical_team.run_folder.metrics_records import read_step_records


def table(summary: dict[str, Any]) -> str:
    """A short table of the phase: one line per run, and the ratio for bench."""
    head = (
        f"gpu_kit {summary['phase']}{' (cpu)' if summary['cpu'] else ''}: exit {summary['exit_status']}, "
        f"{summary['wall_s']:.0f} s, files in {summary['out']}"
    )
    runs = summary.get("runs", {})
    columns = f"{'run':<16} {'exit':>4} {'wall s':>7} {'startup s':>9} {'steps':>5} {'step s':>7} {'peak GiB':>8} {'limit':>5}"
    lines = [head, columns] if runs else [head]
    for name, run in runs.items():
        figures = run.get("figures") or {}
        startup = run.get("startup_s")
        peak = figures.get("peak_device_memory_reserved_gib")
        cells = [
            f"{name:<16}",
            f"{run['exit_status']!s:>4}",
            f"{run['wall_s']!s:>7}",
            f"{startup if startup is None else round(startup)!s:>9}",
            f"{figures.get('steps_logged', 0)!s:>5}",
            f"{'-' if figures.get('step_s') is None else round(figures['step_s'], 1)!s:>7}",
            f"{'-' if peak is None else round(peak, 2)!s:>8}",
            f"{'yes' if run['stopped_at_limit'] else 'no':>5}",
        ]
        lines.append(" ".join(cells))
    if "peak_memory_mib" in summary:
        lines.append(f"peak memory ({summary['memory_trace']}): {summary['peak_memory_mib']} MiB")
    if summary.get("ratio_selfplay_over_stock") is not None:
        lines.append(f"self-play step / stock step: {summary['ratio_selfplay_over_stock']}")
    return "\n".join(lines)


def games_trained(ladder_dir: Path) -> str:
    """One line per RL rung of a ladder folder: the steps logged and the games trained on (verl's metrics)."""
    lines = []
    for rung in ("rl", "selfplay"):
        metrics = ladder_dir / rung / "checkpoints" / "metrics.jsonl"
        if metrics.is_file():
            steps = read_step_records(metrics).steps
            trained = [step for step in steps if step > 0]  # step 0: the validation before the first step
            games = sum(int(steps[step].get("game/games", 0)) for step in trained)
            lines.append(f"{rung}: {len(trained)} steps, {games} games trained on")
    return "; ".join(lines) or "no RL rung logged a step"
