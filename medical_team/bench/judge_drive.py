"""The judge server benchmark's parts (`medplay bench judge-server`): calls driven at a number in flight, bursts
released together, the server's resident memory sampled while they run, and the figures made of them."""

from __future__ import annotations

import itertools
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psutil

from medical_team.bench.samplers import PeriodicSampler
from medical_team.game.judging import JudgeRequest, JudgeVerdict
from medical_team.judge.client import HttpJudge
from medical_team.reliability.resources import slope as least_squares_slope

MIB = 1024 * 1024
SLOPE_CALLS = 10_000  # the RSS slope is given per this many calls

# One call: the requests of call number k, and what to do with their verdicts (the ledger's check).
MakeCall = Callable[[int], list[JudgeRequest]]
Check = Callable[[int, list[JudgeVerdict]], None]


class Progress:
    """Calls finished so far, read by the memory sampler and the progress lines."""

    def __init__(self) -> None:
        self.done = 0
        self._lock = threading.Lock()

    def add(self) -> None:
        with self._lock:
            self.done += 1


def drive(
    client: HttpJudge,
    numbers: Iterable[int],
    in_flight: int,
    make_call: MakeCall,
    check: Check,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Calls `numbers` with `in_flight` threads sharing one client (as an agent-loop worker does): calls/s, latency."""
    progress = progress or Progress()
    pending = iter(numbers)
    lock = threading.Lock()
    latencies: list[float] = []

    def worker() -> None:
        while True:
            with lock:
                number = next(pending, None)
            if number is None:
                return
            requests = make_call(number)
            start = time.perf_counter()
            verdicts = client.judge(requests)
            latencies.append(time.perf_counter() - start)
            check(number, verdicts)
            progress.add()

    start = time.perf_counter()
    with ThreadPoolExecutor(in_flight) as pool:
        for future in [pool.submit(worker) for _ in range(in_flight)]:
            future.result()
    seconds = time.perf_counter() - start
    return {"in_flight": in_flight, "calls": len(latencies), "seconds": round(seconds, 2),
            "calls_per_s": round(len(latencies) / seconds, 1), "latency_ms": latency_ms(latencies)}  # fmt: skip


def sweep(
    client: HttpJudge,
    server_pid: int,
    in_flights: Sequence[int],
    calls: int,
    first: int,
    make_call: MakeCall,
    check: Check,
    sample_s: float,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """`calls` calls at each number in flight, numbered on from `first`: calls/s, latency, the 429s the client retried
    and the server's peak RSS at each (`progress` counts the calls for an outer sampler)."""
    points = []
    for in_flight in in_flights:
        before = client.stats.overloaded
        with RssSampler(server_pid, Progress(), sample_s) as sampler:
            point = drive(client, range(first, first + calls), in_flight, make_call, check, progress)
        point["429_retried"] = client.stats.overloaded - before
        point["peak_rss_mib"] = max(rss for _, _, rss in sampler.samples)
        points.append(point)
        first += calls
        say(f"{in_flight} in flight: {point['calls_per_s']} calls/s, p50 {point['latency_ms']['p50']} ms, "
            f"p99 {point['latency_ms']['p99']} ms")  # fmt: skip
    return points


def bursts(
    client: HttpJudge,
    count: int,
    size: int,
    make_call: MakeCall,
    check: Check,
    first: int = 0,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """`count` bursts of `size` calls, each burst's calls released together (a barrier), the next once all are back."""
    barrier = threading.Barrier(size)
    latencies: list[float] = []
    refused_per_burst: list[int] = []
    numbers = itertools.count(first)

    def one(number: int) -> None:
        requests = make_call(number)
        barrier.wait()
        start = time.perf_counter()
        verdicts = client.judge(requests)
        latencies.append(time.perf_counter() - start)
        check(number, verdicts)
        if progress is not None:
            progress.add()

    with ThreadPoolExecutor(size) as pool:
        for _ in range(count):
            before = client.stats.overloaded
            for future in [pool.submit(one, next(numbers)) for _ in range(size)]:
                future.result()
            refused_per_burst.append(client.stats.overloaded - before)
    return {
        "bursts": count,
        "calls_per_burst": size,
        "calls": len(latencies),
        "bursts_with_429": sum(refused > 0 for refused in refused_per_burst),
        "429_per_burst": {"median": statistics.median(refused_per_burst), "max": max(refused_per_burst)},
        "latency_ms": latency_ms(latencies),
    }


def latency_ms(seconds: Sequence[float]) -> dict[str, float]:
    """p50, p99 and the largest of call times, in milliseconds."""
    ordered = sorted(seconds)

    def at(share: float) -> float:
        return round(1000 * ordered[min(len(ordered) - 1, int(share * len(ordered)))], 1)

    return {"p50": at(0.50), "p99": at(0.99), "max": round(1000 * ordered[-1], 1)}


class RssSampler(PeriodicSampler):
    """The server process's resident memory every `every_s` seconds, beside the calls finished by then."""

    def __init__(self, pid: int, progress: Progress, every_s: float) -> None:
        super().__init__(every_s)
        self.process = psutil.Process(pid)
        self.progress = progress
        self.samples: list[tuple[float, int, float]] = []  # (seconds, calls done, RSS MiB)
        self._start = time.monotonic()

    def sample(self) -> None:
        """Take one sample now."""
        rss = self.process.memory_info().rss / MIB
        self.samples.append((round(time.monotonic() - self._start, 2), self.progress.done, round(rss, 2)))

    def summary(self, warmup_calls: int) -> dict[str, Any]:
        """RSS at the start, the end and its peak, and its least-squares slope per SLOPE_CALLS calls after warm-up."""
        after = [(calls, rss) for _, calls, rss in self.samples if calls >= warmup_calls]
        return {
            "start_mib": self.samples[0][2],
            "after_warmup_mib": after[0][1] if after else None,
            "end_mib": self.samples[-1][2],
            "peak_mib": max(rss for _, _, rss in self.samples),
            "warmup_calls": warmup_calls,
            f"slope_mib_per_{SLOPE_CALLS}_calls": slope(after),
            "series": [list(sample) for sample in self.samples],  # [seconds, calls done, RSS MiB]
        }


def slope(points: Sequence[tuple[int, float]]) -> float | None:
    """The least-squares slope of RSS (MiB) against calls, per SLOPE_CALLS calls (None under 3 points)."""
    if len(points) < 3 or len({calls for calls, _ in points}) < 2:
        return None
    return round(SLOPE_CALLS * least_squares_slope([c for c, _ in points], [r for _, r in points]), 3)


def say(message: str) -> None:
    """A progress line on stderr (stdout carries the JSON)."""
    print(f"bench_judge_server: {message}", file=sys.stderr, flush=True)
