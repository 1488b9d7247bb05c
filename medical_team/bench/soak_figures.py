"""The soak's figures (`medplay bench soak`): slopes per 100 steps after warm-up, step time, a PNG per series, the page.

A slope is a least-squares fit of a value against the step, within each process's life (the runs between kills
have other processes, so each process's own series is centred on its mean and the series of one part are pooled):
a process that grows 1 MiB every 100 steps shows 1.0 whatever its size. Samples of each run's first
`--warmup-steps` steps are left out (imports, compilation, allocator pools filling), and those of its last step
(a run that ends tears its processes down while the sampler still looks).

A sample lands anywhere in a step, and a phase's short-lived allocations (an update's activations: tens of MiB) move
it; the private-memory floor, the least each process held in each `FLOOR_WINDOW` steps, is what it keeps between
them, and its slope is the one those allocations cannot tilt.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from medical_team.bench.results import write_json
from medical_team.reliability.resources import slope
from medical_team.run.stack import git_commit

PER = 100  # slopes are per this many steps
SERIES = ("rss_mib", "anon_mib", "open_files", "threads")
FLOOR_WINDOW = 25  # steps: a process's private-memory floor is its least value over each such window


def pooled_slope(series: Iterable[list[tuple[float, float]]]) -> float | None:
    """The slope per `PER` steps of (step, value) series fitted together, each around its own mean (None: no spread).

    Centred on their own means, the series share one least-squares line through the origin: its slope is theirs.
    """
    xs: list[float] = []
    ys: list[float] = []
    for points in series:
        if len({x for x, _ in points}) < 2:
            continue
        mean_x = statistics.fmean(x for x, _ in points)
        mean_y = statistics.fmean(y for _, y in points)
        xs += [x - mean_x for x, _ in points]
        ys += [y - mean_y for _, y in points]
    return None if len(set(xs)) < 2 else round(slope(xs, ys) * PER, 3)


def floors(points: list[tuple[float, float]], window: int = FLOOR_WINDOW) -> list[tuple[float, float]]:
    """(first step of the window, least value in it) for each `window` steps that hold (step, value) points."""
    by_window: dict[int, list[float]] = defaultdict(list)
    for step, value in points:
        by_window[int(step) // window].append(value)
    return [(index * window, min(values)) for index, values in sorted(by_window.items())]


def warm(samples: list[dict[str, Any]], segments: list[dict[str, Any]], warmup: int) -> list[dict[str, Any]]:
    """The samples taken after the first `warmup` steps of their run and before its last step (its teardown)."""
    starts = [segment["resumed_from"] or 0 for segment in segments]
    last = {
        index: max(s["step"] for s in samples if s["segment"] == index) for index in {s["segment"] for s in samples}
    }
    return [
        s
        for s in samples
        if s["segment"] < len(starts) and starts[s["segment"]] + warmup <= s["step"] < last[s["segment"]]
    ]


def process_series(samples: list[dict[str, Any]], key: str) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """part -> `run<segment>:pid<pid>` -> (step, value) of each process's `key`."""
    found: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for sample in samples:
        for process in sample["processes"]:
            found[process["kind"]][f"run{sample['segment']}:pid{process['pid']}"].append((sample["step"], process[key]))
    return found


def run_series(samples: list[dict[str, Any]], value) -> list[list[tuple[float, float]]]:
    """(step, value(sample)) per run between kills."""
    by_segment: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for sample in samples:
        by_segment[sample["segment"]].append((sample["step"], value(sample)))
    return list(by_segment.values())


def per_step(values: dict[int, float], segments: list[dict[str, Any]], steps: int) -> dict[str, Any]:
    """Medians of a per-step figure over the first and the last tenth of the steps (each run's first step left out:
    start-up), their change and the slope per 100 steps."""
    first_steps = {(segment["resumed_from"] or 0) + 1 for segment in segments}
    timed = {step: value for step, value in values.items() if step not in first_steps}
    tenth = max(steps // 10, 1)
    head = [value for step, value in timed.items() if step <= tenth]
    tail = [value for step, value in timed.items() if step > steps - tenth]
    if not head or not tail:
        return {}
    first, last = statistics.median(head), statistics.median(tail)
    return {
        "first_tenth_median_s": round(first, 3),
        "last_tenth_median_s": round(last, 3),
        "change_percent": round((last / first - 1) * 100, 1),
        "slope_s_per_100_steps": pooled_slope([sorted(timed.items())]),
    }


def analyse(
    samples: list[dict[str, Any]],
    step_seconds: dict[int, float],
    step_cpu_seconds: dict[int, float],
    segments: list[dict[str, Any]],
    args: Any,
) -> dict[str, Any]:
    """Every slope, the step time and its CPU time: per process part (RSS, open files, threads), the run's total, shm,
    disk."""
    settled = warm(samples, segments, args.warmup_steps)
    parts: dict[str, dict[str, Any]] = defaultdict(dict)
    for key in SERIES:
        for kind, processes in process_series(settled, key).items():
            slopes = [pooled_slope([points]) for points in processes.values()]
            parts[kind][f"{key}_per_100_steps"] = pooled_slope(processes.values())
            parts[kind][f"{key}_worst_process"] = max((s for s in slopes if s is not None), default=None)
    for kind, processes in process_series(settled, "anon_mib").items():
        slopes = [pooled_slope([floors(points)]) for points in processes.values()]
        parts[kind]["anon_floor_mib_per_100_steps"] = pooled_slope(floors(points) for points in processes.values())
        parts[kind]["anon_floor_mib_worst_process"] = max((s for s in slopes if s is not None), default=None)
    for kind, processes in process_series(samples, "rss_mib").items():
        parts[kind]["processes"] = len(processes)
        parts[kind]["rss_mib_last"] = round(sum(points[-1][1] for points in processes.values() if points), 1)
    folders = sorted({name for sample in samples for name in sample["folders_mib"]})
    last = samples[-1] if samples else {"folders_mib": {}}
    return {
        "per_part": dict(sorted(parts.items(), key=lambda item: -(item[1].get("anon_mib_per_100_steps") or 0))),
        "run_anon_mib_per_100_steps": pooled_slope(
            run_series(settled, lambda s: sum(p["anon_mib"] for p in s["processes"]))
        ),
        "available_mib_per_100_steps": pooled_slope(run_series(settled, lambda s: s["available_mib"])),
        "shm_mib_per_100_steps": pooled_slope(run_series(settled, lambda s: s["shm_mib"])),
        "folders": {
            name: {
                "mib_per_100_steps": pooled_slope(run_series(settled, lambda s, n=name: s["folders_mib"].get(n, 0.0))),
                "mib_last": round(last["folders_mib"].get(name, 0.0), 2),
            }
            for name in folders
        },
        "step_time": per_step(step_seconds, segments, args.steps),
        "cpu_time": per_step(step_cpu_seconds, segments, args.steps),
        "warmup_steps": args.warmup_steps,
        "samples": len(samples),
        "samples_after_warmup": len(settled),
    }


def plot_all(folder: Path, document: dict[str, Any]) -> list[str]:
    """A PNG per series: each part's private memory (a line per process), open files, threads, shm, memory, disk, step
    time, CPU time per step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    samples, kills = document["samples"], [s["killed_after_step"] for s in document["segments"]]
    written = []

    def save(name: str, title: str, ylabel: str, lines: dict[str, list[tuple[float, float]]]) -> None:
        figure, axes = plt.subplots(figsize=(6, 3.2), dpi=80)
        for label, points in lines.items():
            axes.plot([x for x, _ in points], [y for _, y in points], label=label, linewidth=1)
        for step in filter(None, kills):
            axes.axvline(step, color="grey", linestyle=":", linewidth=1)
        axes.set(title=title, xlabel="step (dotted: SIGKILL)", ylabel=ylabel)
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        if 1 < len(lines) <= 8:
            axes.legend(fontsize=6)
        figure.tight_layout()
        figure.savefig(folder / name)
        plt.close(figure)
        written.append(name)

    for kind, processes in sorted(process_series(samples, "anon_mib").items()):
        save(f"private-{kind.replace(':', '-')}.png", f"private memory of {kind}", "MiB", dict(processes))
    for key, label in (("open_files", "open files"), ("threads", "threads")):
        totals = {kind: _summed(processes) for kind, processes in process_series(samples, key).items()}
        save(f"{key}.png", f"{label} by part (summed over its processes)", label, totals)
    save(
        "run-private.png",
        "private memory of the whole run",
        "MiB",
        _by_run(samples, lambda s: sum(p["anon_mib"] for p in s["processes"])),
    )
    save("shm.png", "/dev/shm used", "MiB", _by_run(samples, lambda s: s["shm_mib"]))
    save("available.png", "host memory available", "MiB", _by_run(samples, lambda s: s["available_mib"]))
    folders = sorted({name for sample in samples for name in sample["folders_mib"]})
    save(
        "output-folder.png",
        "output folder by subfolder",
        "MiB",
        {name: [(s["step"], s["folders_mib"].get(name, 0.0)) for s in samples] for name in folders},
    )
    steps = sorted((int(step), seconds) for step, seconds in document["step_seconds"].items())
    save("step-time.png", "step time", "s", {"timing_s/step": steps})
    cpu = sorted((int(step), seconds) for step, seconds in document["step_cpu_seconds"].items())
    save("cpu-per-step.png", "CPU time per step, all the run's processes", "CPU s", {"CPU seconds": cpu})
    return written


def _summed(processes: dict[str, list[tuple[float, float]]]) -> list[tuple[float, float]]:
    """The values of several processes summed per step."""
    totals: dict[float, float] = defaultdict(float)
    for points in processes.values():
        for x, y in points:
            totals[x] += y
    return sorted(totals.items())


def _by_run(samples: list[dict[str, Any]], value) -> dict[str, list[tuple[float, float]]]:
    """(step, value) lines, one per run between kills."""
    return {f"run {index}": points for index, points in enumerate(run_series(samples, value))}


def _number(value: Any) -> str:
    return "n/a" if value is None else f"{value:+.2f}" if isinstance(value, float) else str(value)


def page(document: dict[str, Any], folder_name: str, pictures: list[str]) -> str:
    """The Markdown page of one soak."""
    figures, settings = document["figures"], document["settings"]
    lines = [
        f"# Soak on CPU: {settings['steps']} steps, "
        + (f"killed {settings['kills']} times and resumed" if settings["kills"] else "no kill")
        + ", every process watched",
        "",
        (
            f"Written by `medplay bench soak` (`make soak`) on {document['date']}, commit `{document['commit']}`, "
            "machine "
            f"{document['machine']}. Command: `{' '.join(settings['command'])}`; SIGKILL of the whole tree after steps "
            f"{[s['killed_after_step'] for s in document['segments'] if s['killed_after_step']]} (seed {settings['seed']}), "
            f"each run resumed; {document['seconds']:.0f} s in all. Figures: `{folder_name}/soak.json`; pictures below."
        ),
        "",
        "## The run's own checks",
        "",
    ]
    for index, segment in enumerate(document["segments"]):
        how = (
            f"killed after step {segment['killed_after_step']} (tracker at {segment['checkpoint_at_kill']})"
            if segment["killed_after_step"]
            else f"ran to its end, exit status {segment['exit_status']}"
        )
        resumed = f"resumed from step {segment['resumed_from']}" if index else "started from scratch"
        lines.append(f"- run {index}: {resumed}; {how}; {segment['seconds']:.0f} s")
    end = document["end"]
    lines += [
        (
            f"- metrics file: {end.get('steps_logged')} records for {settings['steps']} steps; checkpoints kept: "
            f"{end.get('checkpoints_kept')} (asked {settings['keep']})"
        ),
        f"- problems: {document['problems'] or 'none'}",
        "",
        f"## Slopes per {PER} steps after each run's first {figures['warmup_steps']} steps",
        "",
        "Private memory (RSS less file-backed and shared pages) is what a process keeps; RSS also moves as the kernel",
        "drops and reloads library pages under memory pressure. MiB per 100 steps; worst: the part's fastest process.",
        f"Floor: the least private memory each process held in each {FLOOR_WINDOW} steps, which a phase's short-lived",
        "allocations do not move.",
        "",
        (
            "| part | processes | RSS at the end, MiB | private MiB / 100 | worst process | private floor MiB / 100 "
            "| worst process | RSS MiB / 100 | open files / 100 | threads / 100 |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for kind, row in figures["per_part"].items():
        lines.append(
            f"| {kind} | {row.get('processes')} | {row.get('rss_mib_last')} | {_number(row.get('anon_mib_per_100_steps'))}"
            f" | {_number(row.get('anon_mib_worst_process'))} | {_number(row.get('anon_floor_mib_per_100_steps'))}"
            f" | {_number(row.get('anon_floor_mib_worst_process'))} | {_number(row.get('rss_mib_per_100_steps'))} | "
            f"{_number(row.get('open_files_per_100_steps'))} | {_number(row.get('threads_per_100_steps'))} |"
        )
    step_time, cpu_time = figures["step_time"], figures["cpu_time"]
    lines += [
        "",
        (
            f"- the whole run's private memory: {_number(figures['run_anon_mib_per_100_steps'])} MiB per 100 steps; host memory "
            f"available: {_number(figures['available_mib_per_100_steps'])} MiB; `/dev/shm`: "
            f"{_number(figures['shm_mib_per_100_steps'])} MiB"
        ),
        (
            f"- step time: median {step_time.get('first_tenth_median_s')} s over the first tenth of the steps, "
            f"{step_time.get('last_tenth_median_s')} s over the last ({_number(step_time.get('change_percent'))} %); "
            f"slope {_number(step_time.get('slope_s_per_100_steps'))} s per 100 steps"
        ),
        (
            f"- CPU time per step, all the run's processes: median {cpu_time.get('first_tenth_median_s')} s over the "
            f"first tenth of the steps, {cpu_time.get('last_tenth_median_s')} s over the last "
            f"({_number(cpu_time.get('change_percent'))} %), slope {_number(cpu_time.get('slope_s_per_100_steps'))} s "
            "per 100 steps: the work the step's processes did (a step slower with the same CPU time waited: for other "
            "guests of the machine, a disk, the judge; one with more CPU time worked more or ran on slower cores)"
        ),
        "",
        "| output subfolder | MiB at the end | MiB / 100 steps |",
        "|---|---|---|",
    ]
    for name, row in figures["folders"].items():
        lines.append(f"| {name} | {row['mib_last']} | {_number(row['mib_per_100_steps'])} |")
    lines += ["", "## Pictures", ""]
    lines += [f"![{name}]({folder_name}/{name})" for name in pictures]
    return "\n".join(lines) + "\n"


def write(folder: Path, document: dict[str, Any]) -> tuple[dict[str, Any], list[Path]]:
    """soak.json and the PNGs into `folder`, the page beside it as `<folder>.md`; the provenance and the files."""
    document = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "commit": git_commit(), **document}
    facts = write_json(folder / "soak.json", document, indent=None)
    pictures = plot_all(folder, document)
    markdown = folder.with_suffix(".md")
    markdown.write_text(page(document, folder.name, pictures))
    return facts, [folder / "soak.json", markdown, *(folder / name for name in pictures)]
