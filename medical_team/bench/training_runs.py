"""What every benchmark of training runs shares: the data and tiny model prepared once, one fresh `medplay train`
run measured, the cpu-smoke overrides they all start from, and their common options."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from medical_team.bench.commands import medplay_script
from medical_team.bench.metric_medians import summarise_metrics
from medical_team.bench.runs import run_sampled


def prepare(work: Path) -> tuple[Path, Path]:
    """The converted data folder and the tiny model folder shared by both runs (built once)."""
    data, model = work / "data", work / "tiny-qwen3"
    if not (data / "train.parquet").is_file():
        subprocess.run(medplay_script("convert", "--output", str(data)), check=True, stdout=subprocess.DEVNULL)
    if not (model / "config.json").is_file():
        from medical_team.models.tiny import build_tiny_model

        build_tiny_model(model)
    return data, model


def train_run(name: str, work: Path, common: list[str], extra: tuple[str, ...], timeout_s: float, skip: int) -> dict:
    """One fresh training run; its exit status, wall time, peak memory and metric medians."""
    output = work / name
    shutil.rmtree(output, ignore_errors=True)
    load_before = os.getloadavg()
    run = run_sampled(
        medplay_script("train", *common, f"medplay.output_dir={output}", *extra), work / f"{name}.log", timeout_s
    )
    result: dict[str, Any] = {
        "returncode": run.returncode,
        "wall_s": round(run.wall_s, 1),
        "peak_rss_mib": round(run.peak_rss_mib),
        "load_average_before": [round(x, 2) for x in load_before],
        "log": str(run.log),
        "overrides": [*common, *extra],
    }
    metrics = output / "checkpoints" / "metrics.jsonl"
    if run.returncode == 0 and metrics.is_file():
        result.update(summarise_metrics(metrics, skip))
    else:
        result["error"] = f"training exited with status {run.returncode}; see {run.log}"
    return result


def add_run_arguments(parser: argparse.ArgumentParser, output: Path, steps: int = 6, skip: int = 2) -> None:
    """The options every benchmark of training runs takes: steps, warm-up, scratch folder, result file, time limit."""
    parser.add_argument("--steps", type=int, default=steps, help=f"training steps per run (default {steps})")
    parser.add_argument(
        "--skip", type=int, default=skip, help=f"warm-up steps left out of the medians (default {skip})"
    )
    parser.add_argument("--work", type=Path, default=Path("build/bench"), help="scratch folder (default build/bench)")
    parser.add_argument("--output", type=Path, default=output, help=f"result file (default {output})")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds allowed per training run")


def cpu_smoke_overrides(data: Path, model: Path, steps: int) -> list[str]:
    """The overrides every benchmarked run shares: cpu-smoke on the prepared data and model, no checkpoints."""
    return [
        "profile=cpu-smoke",
        f"medplay.data_dir={data}",
        f"medplay.model.path={model}",
        "medplay.model.build_tiny=false",
        f"trainer.total_training_steps={steps}",
        "trainer.save_freq=-1",
        "trainer.resume_mode=disable",
    ]
