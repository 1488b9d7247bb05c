"""Benchmark: variants of one training step, run in alternating rounds: padding removal, token-sized micro-batches,
verl's stock step with medplay's replay poll and with verl's own.

    medplay bench step-variants                 # writes build/bench_step_variants.json
    medplay bench step-variants --rounds 3 --variants padded,remove_padding

Every variant is the real verl trainer on the cpu-smoke profile (the tiny model, rules judge) with the same data
and steps as `medplay bench step` (step.py), plus its overrides. The variants run one after another in
each round, and rounds repeat the order, so a change in the machine's load falls on every variant alike.
Figures are medians over the steps after the warm-up steps (verl's `timing_s/*` in each run's metrics
JSONL), per run and then the median over rounds. `remove_padding` packs the rows into one sequence with
restarting position ids, attended under sdpa with the block-diagonal mask transformers builds from them
(tests/plugin/test_logprob_paths.py shows the numbers equal the padded path's).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

from medical_team.bench.results import write_json
from medical_team.bench.step_figures import generated_tokens, per_token, samples_per_step
from medical_team.bench.stock_step import STOCK_OVERRIDES
from medical_team.bench.table import print_result
from medical_team.bench.training_runs import add_run_arguments, cpu_smoke_overrides, prepare, train_run

DYNAMIC_BSZ = (
    "actor_rollout_ref.actor.use_dynamic_bsz=true",
    "actor_rollout_ref.ref.log_prob_use_dynamic_bsz=true",
    "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=true",
)
REMOVE_PADDING = ("actor_rollout_ref.model.use_remove_padding=true",)
# Stock runs train one row per prompt: cpu-smoke's train_batch_size.
STOCK_ROWS = 4
VARIANTS: dict[str, tuple[str, ...]] = {
    # cpu-smoke as shipped: fixed micro-batches of 4 rows, each padded to the batch's longest prompt and response.
    "padded": (),
    # `make bench`'s stock single-turn step, and the same with verl's own 2 s replay poll (its sampler seam unused).
    "stock": STOCK_OVERRIDES,
    "stock_verl_poll": tuple(o for o in STOCK_OVERRIDES if not o.startswith("trainer.v1.sampler.")),
    "remove_padding": REMOVE_PADDING,
    # verl's default budgets (16,384 tokens a micro-batch): a cpu-smoke step's rows in one micro-batch.
    "dynamic_bsz": DYNAMIC_BSZ,
    "remove_padding_dynamic_bsz": REMOVE_PADDING + DYNAMIC_BSZ,
}
# The phases padding changes; the rest of the step (generation, weight sync) is read for the total only.
TRAINING_PHASES = ("old_log_prob", "ref", "update_actor")


def median(values: list[float]) -> float | None:
    """Median rounded to milliseconds, or None when there are no values."""
    return round(statistics.median(values), 3) if values else None


def ms_per_generated_token(name: str, run: dict[str, Any]) -> float | None:
    """A run's step milliseconds per generated token (stock runs: one row per prompt)."""
    rows = STOCK_ROWS if name.startswith("stock") else samples_per_step(run)
    return per_token(run.get("step_s"), generated_tokens(run, rows))


def summary(name: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over a variant's rounds: step, generation, training phases and their sum, time per generated token."""
    measured = [run for run in runs if run.get("step_s") is not None]
    phases = {
        phase: median([run["phase_s"][phase] for run in measured if run["phase_s"].get(phase) is not None])
        for phase in TRAINING_PHASES
    }
    return {
        "rounds_measured": len(measured),
        "step_s": median([run["step_s"] for run in measured]),
        "gen_s": median([run["phase_s"]["gen"] for run in measured if run["phase_s"].get("gen") is not None]),
        "phase_s": phases,
        "training_phases_s": median([sum(run["phase_s"][p] or 0.0 for p in TRAINING_PHASES) for run in measured]),
        "tokens_per_step": median([run["tokens_per_step"] for run in measured if run.get("tokens_per_step")]),
        "ms_per_generated_token": median([v for run in measured if (v := ms_per_generated_token(name, run))]),
    }


def variant_names(text: str) -> list[str]:
    """A --variants value: comma-separated names of VARIANTS."""
    names = [name for name in text.split(",") if name]
    unknown = sorted(set(names) - set(VARIANTS))
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`medplay bench step-variants`' options."""
    parser.add_argument("--rounds", type=int, default=2, help="times every variant runs, alternating (default 2)")
    parser.add_argument(
        "--variants", type=variant_names, default=",".join(VARIANTS), help="comma-separated names (default: all)"
    )
    add_run_arguments(parser, Path("build/bench_step_variants.json"))


def run(args: argparse.Namespace) -> int:
    """Run every variant in every round and write the medians as JSON; 0 when every run finished."""
    from medical_team.run.stack import stack_versions

    names = args.variants
    work = args.work.resolve()
    data, model = prepare(work)
    common = cpu_smoke_overrides(data, model, args.steps)
    started = time.time()
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for round_number in range(args.rounds):
        for name in names:
            run = train_run(f"variant_{name}_{round_number + 1}", work, common, VARIANTS[name], args.timeout, args.skip)
            run["round"] = round_number + 1
            runs[name].append(run)
            print(f"variant {name}, round {round_number + 1}: step {run.get('step_s')} s", flush=True)
    report = {
        "what": "cpu-smoke step (tiny model, rules judge) per variant (padding, micro-batches, stock), alternating rounds",
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
        "host": {"cpus": os.cpu_count(), "load_average_end": os.getloadavg()},
        "versions": stack_versions(),
        "steps": args.steps,
        "warmup_steps_skipped": args.skip,
        "overrides": {name: list(VARIANTS[name]) for name in names},
        "summary": {name: summary(name, runs[name]) for name in names},
        "runs": runs,
    }
    facts = write_json(args.output, report)
    figures = ("step_s", "gen_s", "training_phases_s", "ms_per_generated_token", "rounds_measured")
    rows = [(name, *(row[key] for key in figures)) for name, row in report["summary"].items()]
    header = ("variant", "step s", "gen s", "training phases s", "ms per generated token", "rounds")
    print_result("variants of one cpu-smoke step (medians over rounds)", rows, facts, [args.output], header)
    return 0 if all(run["returncode"] == 0 for variant in runs.values() for run in variant) else 1

