"""The Python side of scripts/gpu_kit.sh: the prepare and training phases (fit, fit48, fit24, bench), and games.

A phase writes summary.json and prints its table last; `games LADDER_DIR` prints the steps and games a learning
ladder's RL rungs trained (the kit's learn phase ends its note with it).

    .venv/bin/python scripts/gpu_kit.py --help     # and PHASE --help; scripts/gpu_kit.sh calls it (docs/wheelhouse.md)

Every run is `medplay train` in its own process group under the phase's time limit: at the limit less
the stop grace its launcher gets SIGTERM (it saves and stops within `medplay.stop_grace_s`), and
what is still running 15 s after the grace is killed, so a phase always ends by itself. While it
runs, memory is sampled every 0.5 s (nvidia-smi on a GPU, the process tree's resident memory on the
CPU), and every 5 s each part of the run (medical_team/run/processes.py: the launcher, Ray's daemons, the task
runner, the FSDP workers, vLLM's server, engine core and worker, the agent-loop workers, the judge, ...) with its RSS,
open files and threads into processes.csv; each step's record adds the trainer's `resources/...` (host memory, the
run's three largest parts, /dev/shm, the checkpoint volume) beside verl's GPU memory figures (summary.json's
per_step). A phase leaves at most 8 files in the output folder: summary.json, the memory trace, the process
trace, and per run its console, its full log (the launcher's log file) and verl's metrics.

The pieces, beside this command line: scripts/gpu_kit_prepare.py (the work folder, prepare),
scripts/gpu_kit_train.py (the training runs), scripts/gpu_kit_trace.py (the memory and process traces) and
scripts/gpu_kit_report.py (the table, games).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from gpu_kit_prepare import Kit, prepare
from gpu_kit_report import games_trained, table
from gpu_kit_train import training_phase

# The phases this script runs, with their --help line (scripts/gpu_kit.sh runs the others itself).
PHASES_HERE = {
    "prepare": "MEDEC data, policy and judge in --work",
    "fit": "profile 80g judged by the prepared model (--cpu: cpu-smoke)",
    "fit48": "fit's run on this card capped to 48 GiB (profile 48g)",
    "fit24": "fit's run capped to 24 GiB (profile 24g, rules judge)",
    "bench": "the self-play step against verl's stock single-turn step (PART: one of the two runs)",
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The phase and its options, or `games LADDER_DIR`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="phase", required=True, metavar="PHASE")
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--cpu", action="store_true", help="the tiny model and profile cpu-smoke")
    options.add_argument("--work", type=Path, required=True, help="what phases leave for later ones")
    options.add_argument("--out", type=Path, required=True, help="this phase's files (at most 8)")
    options.add_argument("--steps", type=int, default=3, help="training steps per run")
    options.add_argument("--limit-s", type=float, default=540, help="the whole phase's time limit")
    options.add_argument("--extra", default="", help="more Hydra overrides, space-separated")
    for phase, summary in PHASES_HERE.items():
        command = commands.add_parser(phase, parents=[options], help=summary, description=summary)
        if phase == "bench":
            command.add_argument("part", nargs="?", choices=["selfplay", "stock"], help="one of its two runs")
        else:
            command.set_defaults(part=None)
    what = "print the steps and games trained by a learning ladder's RL rungs (the learn phase's summary note)"
    games = commands.add_parser("games", help=what, description=what)
    games.add_argument("ladder_dir", type=Path, metavar="LADDER_DIR", help="the ladder's folder (LADDER_DIR)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run one Python phase and write summary.json, printing the table last; or print `games`' line."""
    args = parse_args(argv)
    if args.phase == "games":
        print(games_trained(args.ladder_dir))
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    kit = Kit(args.cpu, args.work.resolve(), args.out.resolve(), args.steps, args.limit_s, tuple(args.extra.split()))
    started = time.monotonic()
    summary: dict[str, Any] = {"phase": args.phase, "cpu": args.cpu, "out": str(kit.out), "limit_s": kit.limit_s}
    try:
        if args.phase == "prepare":
            summary.update(prepare(kit))
            status = 0
        else:
            if not (kit.model / "config.json").is_file():
                raise SystemExit(f"gpu_kit: {kit.model} is missing: run the prepare phase first")
            summary.update(training_phase(kit, args.phase, args.part))
            statuses = [run["exit_status"] for run in summary["runs"].values()]
            status = next((code for code in statuses if code != 0), 0)
    except (Exception, SystemExit) as error:  # noqa: BLE001 - whatever failed, the phase answers with its summary
        summary["error"] = f"{type(error).__name__}: {error}"
        status = 1
    summary["exit_status"] = status
    summary["wall_s"] = round(time.monotonic() - started, 1)
    (kit.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(table(summary))
    return 0 if status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
