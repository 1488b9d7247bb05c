"""Benchmark: the judge server under load, a real `medplay judge serve` process driven by the real client (`HttpJudge`).

    make bench-judge-server     (medplay bench judge-server --output build/bench-judge-server.json)

1. soak: --calls one-game calls (50,000) at --in-flight (64) against the rules backend, the server's resident memory
   sampled every --sample-s seconds, its least-squares slope per 10,000 calls after --warmup-calls;
2. bursts: --bursts bursts of twice --burst-cap calls released together against a server started with
   `--max-concurrent` --burst-cap: the 429s it answered, each to be retried by the client;
3. sweep: calls/s and p50/p99 latency at each of --sweep calls in flight (the soak's server, `--max-concurrent` 64);
4. model: --model-warmup calls, then a sweep and bursts against a tiny random Qwen3 judge built now and loaded by the
   server (`--backend hf`, one intra-op thread as cpu-smoke gives its served judge).

Every call's games carry their number (judge_load.py): each verdict must come back once, to its own game.
A model-judged game's verdict names no game (the random model writes no verdict), so each model call also carries a
copy of its seed, which a rule settles with the game's tag. Exit 0 when every verdict came back once to its game,
every 429 was retried, no request was judged twice (a try that failed but on a 429) and the soak's RSS slope is
within RSS_SLOPE_TARGET_MIB.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from medical_team.bench.judge_drive import SLOPE_CALLS, Progress, RssSampler, bursts, drive, say, sweep
from medical_team.bench.judge_load import Ledger, ServedJudge, game
from medical_team.bench.results import machine, write_result
from medical_team.game.judging import JudgeVerdict
from medical_team.judge.client import HttpJudge
from medical_team.run.stack import git_commit

RSS_SLOPE_TARGET_MIB = 1.0  # per 10,000 calls after warm-up: at most 100 MiB over a million calls


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",")]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`medplay bench judge-server`'s options (defaults: about 8 minutes on 2 busy cores)."""
    parser.add_argument("--output", type=Path, default=Path("build/bench-judge-server.json"), help="result file")
    parser.add_argument("--calls", type=int, default=50_000, help="soak: calls against the rules backend")
    parser.add_argument("--in-flight", type=int, default=64, help="soak: calls in flight")
    parser.add_argument("--sample-s", type=float, default=2.0, help="seconds between RSS samples")
    parser.add_argument("--warmup-calls", type=int, default=10_000, help="calls before the RSS slope is fitted")
    parser.add_argument("--sweep", type=_ints, default=[1, 4, 16, 64, 128], help="calls in flight, comma-separated")
    parser.add_argument("--sweep-calls", type=int, default=1_500, help="calls at each point of the sweep")
    parser.add_argument("--burst-cap", type=int, default=8, help="the bursts' server's --max-concurrent")
    parser.add_argument("--bursts", type=int, default=100, help="bursts of twice --burst-cap calls")
    parser.add_argument("--model-sweep", type=_ints, default=[1, 4, 16], help="model: calls in flight")
    parser.add_argument("--model-warmup", type=int, default=12, help="model: calls one at a time before the sweep")
    parser.add_argument("--model-calls", type=int, default=60, help="model: calls at each point of its sweep")
    parser.add_argument("--model-bursts", type=int, default=8, help="model: bursts of twice --burst-cap calls")
    parser.add_argument("--model-tokens", type=int, default=16, help="model: tokens a verdict may take")


def rules_phases(args: argparse.Namespace, logs: Path) -> dict[str, Any]:
    """The soak and the sweep on one rules server, then the bursts on a server capped at --burst-cap."""
    total = args.calls + len(args.sweep) * args.sweep_calls
    ledger = Ledger(total + args.bursts * 2 * args.burst_cap)

    def one_game(number: int) -> list:
        return [game(number)]

    def check(number: int, verdicts: list[JudgeVerdict]) -> None:
        ledger.record([number], verdicts)

    with ServedJudge(["--backend", "rules"], logs / "rules-server.log") as server:
        client = HttpJudge(server.url)
        progress = Progress()
        say(f"soak: {args.calls} calls at {args.in_flight} in flight against {server.url} (pid {server.pid})")
        with RssSampler(server.pid, progress, args.sample_s) as sampler:
            soak = drive(client, range(args.calls), args.in_flight, one_game, check, progress)
        soak["rss"] = sampler.summary(args.warmup_calls)
        say(f"soak: {soak['calls_per_s']} calls/s, RSS {soak['rss']['start_mib']} -> {soak['rss']['end_mib']} MiB")
        say(f"sweep: {args.sweep_calls} calls at each of {args.sweep} in flight")
        points = sweep(client, server.pid, args.sweep, args.sweep_calls, args.calls, one_game, check, args.sample_s)
        client.close()
    soak_server = _server_facts(server, client)

    with ServedJudge(
        ["--backend", "rules", "--max-concurrent", str(args.burst_cap)], logs / "burst-server.log"
    ) as capped:
        burst_client = HttpJudge(capped.url)
        say(f"bursts: {args.bursts} of {2 * args.burst_cap} calls against --max-concurrent {args.burst_cap}")
        burst = bursts(burst_client, args.bursts, 2 * args.burst_cap, one_game, check, first=total)
        burst_client.close()
    burst.update(max_concurrent=args.burst_cap, server=_server_facts(capped, burst_client))
    say(f"bursts: {burst['server']['answered_429']} answers 429, {burst['bursts_with_429']} bursts with one")
    return {"soak": soak, "sweep": points, "server": soak_server, "bursts": burst, "ledger": ledger.summary()}


def model_phases(args: argparse.Namespace, logs: Path, model_dir: Path) -> dict[str, Any]:
    """A sweep and bursts against the hf backend on a tiny random model: each call a copy (rule) and a model game."""
    from medical_team.models.tiny import build_tiny_model

    build_tiny_model(model_dir)
    calls = args.model_warmup + len(args.model_sweep) * args.model_calls + args.model_bursts * 2 * args.burst_cap
    ledger = Ledger(calls)
    outcomes: Counter[str] = Counter()

    def pair(number: int) -> list:
        return [game(number, copy=True), game(number)]

    def check(number: int, verdicts: list[JudgeVerdict]) -> None:
        ledger.record([number], verdicts[:1])
        model = verdicts[1] if len(verdicts) > 1 else JudgeVerdict.as_tie("missing")
        outcomes["parse_error" if model.parse_error else "verdict" if model.reason == "model" else "other"] += 1

    command = ["--backend", "hf", "--model", str(model_dir), "--max-new-tokens", str(args.model_tokens),
               "--max-concurrent", str(args.burst_cap)]  # fmt: skip
    # one intra-op thread, as cpu-smoke gives its served judge: two on two busy cores made a call 10-30 times slower
    with ServedJudge(command, logs / "model-server.log", env={"OMP_NUM_THREADS": "1"}) as server:
        client = HttpJudge(server.url)
        progress = Progress()
        say(f"model: {args.model_warmup} calls to warm up, then {args.model_calls} at each of {args.model_sweep}")
        with RssSampler(server.pid, progress, args.sample_s) as sampler:
            warmup = drive(client, range(args.model_warmup), 1, pair, check, progress)
            points = sweep(
                client, server.pid, args.model_sweep, args.model_calls, args.model_warmup, pair, check,
                args.sample_s, progress,
            )  # fmt: skip
            first = args.model_warmup + len(args.model_sweep) * args.model_calls
            burst = bursts(client, args.model_bursts, 2 * args.burst_cap, pair, check, first, progress)
        client.close()
    burst["max_concurrent"] = args.burst_cap
    rss = sampler.summary(0)
    rss.pop(f"slope_mib_per_{SLOPE_CALLS}_calls")  # a few hundred calls: no trend to fit
    return {"backend": "hf", "model": "tiny random Qwen3 (medical_team/models/tiny.py)",
            "max_new_tokens": args.model_tokens, "intra_op_threads": 1, "warmup": warmup, "sweep": points, "bursts": burst, "rss": rss,
            "server": _server_facts(server, client), "ledger": ledger.summary(),
            "model_verdicts": dict(outcomes)}  # fmt: skip


def _server_facts(server: ServedJudge, client: HttpJudge) -> dict[str, Any]:
    """What the server's access log and the client's counters say: answers by status, retries, lost batches."""
    return {
        "exit_status": server.returncode,
        "client_requests": client.stats.batches,
        "answered_200": server.answered(200),
        "answered_429": server.answered(429),
        "client_retried_429": client.stats.overloaded,
        "client_retries": client.stats.retries,
        "client_failed_batches": client.stats.failed_batches,
    }


def _all_retried(facts: dict[str, Any]) -> bool:
    """Every 429 the server sent was retried, no batch was lost, and the server exited 0."""
    return (facts["answered_429"] == facts["client_retried_429"] and facts["client_failed_batches"] == 0
            and facts["exit_status"] == 0)  # fmt: skip


def _answered_once(facts: dict[str, Any]) -> bool:
    """No try failed but on a 429 (a request that hung or broke would be tried again), so the server judged each
    request once."""
    return facts["client_retries"] == facts["client_retried_429"] and facts["answered_200"] == facts["client_requests"]


def run(args: argparse.Namespace) -> int:
    """Run the phases, then write the JSON; exit 0 when it meets its targets."""
    started = datetime.now(UTC).isoformat(timespec="seconds")
    load_at_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-judge-") as scratch:
        logs = Path(scratch)
        rules = rules_phases(args, logs)
        model = model_phases(args, logs, logs / "tiny-judge")
    slope = rules["soak"]["rss"][f"slope_mib_per_{SLOPE_CALLS}_calls"]
    checks = {
        "every_verdict_once_to_its_game": all(
            part["ledger"]["answered_once"] == part["ledger"]["games"] and part["ledger"]["misdirected"] == 0
            for part in (rules, model)
        ),
        "every_429_retried": all(
            _all_retried(facts) for facts in (rules["server"], rules["bursts"]["server"], model["server"])
        ),
        "every_request_judged_once": all(
            _answered_once(facts) for facts in (rules["server"], rules["bursts"]["server"], model["server"])
        ),
        "bursts_met_429": rules["bursts"]["server"]["answered_429"] > 0,
        "model_verdicts_from_the_model": model["model_verdicts"].get("other", 0) == 0,
        "rss_flat": slope is not None and slope <= RSS_SLOPE_TARGET_MIB,
    }
    result = {
        "benchmark": "judge_server_load",
        "date": started,
        "commit": git_commit(),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": machine(),
        "load_average_1_5_15_min": {"start": load_at_start, "end": os.getloadavg()},  # the machine is shared
        "target": f"every verdict once to its game, every 429 retried, soak RSS slope <= {RSS_SLOPE_TARGET_MIB} MiB "
        f"per {SLOPE_CALLS} calls after {args.warmup_calls}",
        "rules": rules,
        "model": model,
        "checks": checks,
        "meets_target": all(checks.values()),
    }
    return write_result(args.output, result, "the judge server under load", table_rows(result))


def table_rows(result: dict[str, Any]) -> list[tuple[str, Any]]:
    """The soak's rate and RSS slope, the sweeps' rates, the bursts' 429s and every check."""
    soak = result["rules"]["soak"]
    rows: list[tuple[str, Any]] = [
        ("soak calls per s", soak["calls_per_s"]),
        (f"soak RSS slope MiB per {SLOPE_CALLS} calls", soak["rss"][f"slope_mib_per_{SLOPE_CALLS}_calls"]),
        ("bursts answered 429", result["rules"]["bursts"]["server"]["answered_429"]),
    ]
    for part in ("rules", "model"):
        rows += [
            (f"{part}: calls per s at {point['in_flight']} in flight", point["calls_per_s"])
            for point in result[part]["sweep"]
        ]
    rows += [(f"check: {name}", held) for name, held in result["checks"].items()]
    return rows
