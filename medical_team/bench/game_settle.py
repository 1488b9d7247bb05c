"""Benchmark: games settled per second on one CPU core (format parsing + rules judge + rewards + metrics).

    medplay bench game --games 20000 --repeats 5 --out bench_game.json

Responses are synthetic but realistic: real MEDEC validation notes, attacker rewrites that copy,
edit or truncate the seed, and assessor answers in and out of format. Prints a table; `--out` writes the JSON.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import statistics
import time
from pathlib import Path

from medical_team.bench.provenance import provenance
from medical_team.bench.results import write_json
from medical_team.bench.table import print_result
from medical_team.data.medec import VALIDATION_CSV, bundled_csv, load_medec
from medical_team.data.records import GameSeed
from medical_team.game.judging import JudgeVerdict
from medical_team.game.metrics import game_metrics
from medical_team.game.settle import GameConfig, call_judge, judge_request, settle
from medical_team.judge.rules import RulesJudge

TARGET_GAMES_PER_S = 20_000


def attacker_response(seed: GameSeed, rng: random.Random) -> str:
    """A rewrite that copies the seed, edits one word, or truncates it; sometimes out of format."""
    kind = rng.random()
    if kind < 0.3:
        rewrite = seed.text
    elif kind < 0.8:
        words = seed.text.split()
        words[rng.randrange(len(words))] = "subtly"
        rewrite = " ".join(words)
    else:
        rewrite = seed.text[: len(seed.text) // 4]
    if rng.random() < 0.15:
        return f"I will rewrite it. <answer> {rewrite} </answer> done"
    return f"The goal is to make the error harder to see. </think> <answer> {rewrite} </answer>"


def assessor_response(seed: GameSeed, rng: random.Random) -> str:
    """An assessor reply: ERROR with a quoted sentence, NO_ERROR, or an unreadable verdict."""
    kind = rng.random()
    if kind < 0.45:
        sentence = seed.error_sentence or seed.text.split(". ")[0]
        answer = f"verdict: ERROR\nsentence: {sentence}\nerror_type: diagnosis\ncorrection: something else"
    elif kind < 0.9:
        answer = "verdict: NO_ERROR"
    else:
        answer = "It is hard to say."
    reasoning = "The vital signs fit the diagnosis, but the treatment needs a closer look."
    return f"{reasoning} </think> <answer>\n{answer}\n</answer>"


def make_games(seeds: list[GameSeed], count: int, rng: random.Random) -> list[tuple[GameSeed, str | None, str]]:
    """`count` games (seed, attacker response or None, assessor response) drawn from the seeds."""
    games = []
    for _ in range(count):
        seed = rng.choice(seeds)
        attack = attacker_response(seed, rng) if seed.category.adversarial else None
        games.append((seed, attack, assessor_response(seed, rng)))
    return games


def settle_all(games: list[tuple[GameSeed, str | None, str]], config: GameConfig) -> dict[str, float]:
    """What the game driver does after generation: judge requests, one rules-judge batch, settle, metrics."""
    judge = RulesJudge()
    requests = {i: judge_request(seed, attack, config) for i, (seed, attack, _) in enumerate(games)}
    adversarial = [i for i, request in requests.items() if request is not None]
    verdicts, stats = call_judge(judge, [requests[i] for i in adversarial])
    by_game: dict[int, JudgeVerdict] = dict(zip(adversarial, verdicts, strict=True))
    outcomes = [settle(seed, attack, assess, by_game.get(i), config) for i, (seed, attack, assess) in enumerate(games)]
    return game_metrics(outcomes, stats)


def pin_to_one_core() -> int | None:
    """Pin this process to one CPU core (Linux); the core's id, or None where pinning is unsupported."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    core = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    return core


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`medplay bench game`'s options."""
    parser.add_argument("--games", type=int, default=20_000, help="games settled per repeat")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats (the median is reported)")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the synthetic responses")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON result to this file")


def run(args: argparse.Namespace) -> int:
    """Run the benchmark, print its table and (with --out) write its JSON result."""
    from medical_team.data.seeds import build_seeds  # numpy: imported when the benchmark runs, not for its --help

    core = pin_to_one_core()
    seeds = build_seeds(load_medec(bundled_csv(VALIDATION_CSV)).notes, seed=0)
    games = make_games(seeds, args.games, random.Random(args.seed))
    config = GameConfig()
    settle_all(games[:200], config)  # warm-up
    cpu_times, wall_times = [], []
    gc.disable()  # as timeit does: collector pauses would land in random repeats
    for _ in range(args.repeats):
        cpu_start, wall_start = time.process_time(), time.perf_counter()
        metrics = settle_all(games, config)
        cpu_times.append(time.process_time() - cpu_start)
        wall_times.append(time.perf_counter() - wall_start)
    gc.enable()
    # CPU time is what one core spends; wall time also counts waiting for a busy core
    rates = [args.games / seconds for seconds in cpu_times]
    wall_rate = args.games / statistics.median(wall_times)
    result = {
        "benchmark": "game_settle_throughput",
        "what": "format parse (both roles) + assessor answer parse + rules judge + rewards + step metrics",
        "games_per_repeat": args.games,
        "repeats": args.repeats,
        "games_per_s_median": round(statistics.median(rates), 1),
        "games_per_s_min": round(min(rates), 1),
        "games_per_s_max": round(max(rates), 1),
        "games_per_s_wall_median": round(wall_rate, 1),
        "rate_basis": "process CPU time on one pinned core",
        "target_games_per_s": TARGET_GAMES_PER_S,
        "meets_target": statistics.median(rates) >= TARGET_GAMES_PER_S,
        "pinned_core": core,
        "adversarial_share": round(metrics["judge/calls"] / args.games, 3),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
    }
    facts = write_json(args.out, result) if args.out is not None else provenance()
    rows = [
        ("games per s (CPU time, median)", result["games_per_s_median"]),
        ("games per s (wall, median)", result["games_per_s_wall_median"]),
        (f"meets its target ({TARGET_GAMES_PER_S} a second)", result["meets_target"]),
    ]
    print_result("games settled per second on one core", rows, facts, [args.out] if args.out else [])
    return 0

