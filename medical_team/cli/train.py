"""`medplay train [profile=NAME] [hydra overrides]`: self-play training with verl's trainer."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from medical_team.common.errors import UserInputError
from medical_team.run.benchmark_validation import BENCHMARK_ACCURACY_METRIC
from medical_team.run.redaction import redacted_overrides
from medical_team.run_folder.metrics_records import read_step_records

DEFAULT_PROFILE = "cpu-smoke"
# The probe's report; its `profile` field names the hardware profile it chose.
PROBE_REPORT_ENV = "MEDPLAY_PROBE_REPORT"
DEFAULT_PROBE_REPORT = "probe.json"
# How the commands that compose the training config pick the profile (the end of their --help).
PROFILE_CHOICE = (
    f"Without `profile=`, the probe's choice ({DEFAULT_PROBE_REPORT}, or ${PROBE_REPORT_ENV}) is used, "
    f"else {DEFAULT_PROFILE}."
)
# Shown per step after training; the metrics file holds every metric.
SUMMARY_METRICS = (
    "timing_s/step",
    "samples/attacker",
    "samples/assessor",
    "assessor/accuracy",
    "assessor/reward_mean",
    "attacker/success_rate",
    "attacker/reward_mean",
    "game/tie_rate",
    "actor/grad_norm",
    BENCHMARK_ACCURACY_METRIC,
)


def probe_profile(report: Path) -> str | None:
    """The profile chosen by the probe report at `report`, or None when there is no report."""
    if not report.is_file():
        return None
    try:
        profile = json.loads(report.read_text(encoding="utf-8")).get("profile")
    except (json.JSONDecodeError, AttributeError) as error:
        raise UserInputError(f"not a probe report: {error}", file=str(report)) from error
    if not isinstance(profile, str) or not profile:
        raise UserInputError("no profile name in the probe report", file=str(report), field="profile")
    return profile


def with_profile(overrides: list[str], report: Path) -> list[str]:
    """The overrides, with `profile=` added from the probe report (or cpu-smoke) unless one is given."""
    if any(item.split("=", 1)[0].lstrip("+~") == "profile" for item in overrides):
        return overrides
    return [f"profile={probe_profile(report) or DEFAULT_PROFILE}", *overrides]


def probe_report_path(args: argparse.Namespace) -> Path:
    """The probe report to take the profile from: --probe-report, else $MEDPLAY_PROBE_REPORT, else probe.json."""
    return Path(args.probe_report or os.environ.get(PROBE_REPORT_ENV) or DEFAULT_PROBE_REPORT)


def add_probe_report_argument(parser: argparse.ArgumentParser) -> None:
    """`--probe-report`, read by `probe_report_path`."""
    parser.add_argument(
        "--probe-report", help=f"probe report to take the profile from (default: {DEFAULT_PROBE_REPORT})"
    )


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    """`--config FILE`, read by `user_overrides`."""
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="a YAML file of settings: the overrides' keys, `profile:` included (configs/run.example.yaml); "
        "overrides on the command line win",
    )


def user_overrides(args: argparse.Namespace, overrides: Sequence[str]) -> list[str]:
    """The `--config` file's overrides, then `overrides` (the command line's, which win)."""
    from medical_team.launcher.config.run_file import run_file_overrides

    from_file = run_file_overrides(args.config) if args.config is not None else []
    return [*from_file, *overrides]


def add_profile_arguments(parser: argparse.ArgumentParser) -> None:
    """`--probe-report`, `--config` and the Hydra overrides, shared by the commands that compose the training config."""
    add_probe_report_argument(parser)
    add_config_argument(parser)
    parser.add_argument("overrides", nargs="*", help="Hydra overrides (key=value)")


def step_lines(metrics_file: Path, metrics: Sequence[str], digits: int) -> list[str]:
    """One readable line per logged step with `metrics` shown to `digits` significant digits (none without the file).

    A malformed line of the file is a `UserInputError` naming it (`medical_team.run_folder.metrics_records`).
    """
    if not metrics_file.is_file():
        return []
    lines = []
    for step, data in read_step_records(metrics_file).steps.items():
        shown = "  ".join(
            f"{name}={data[name]:.{digits}g}" for name in metrics if isinstance(data.get(name), int | float)
        )
        lines.append(f"step {step}: {shown}")
    return lines


def print_step_lines(command: str, metrics_file: Path, metrics: Sequence[str], digits: int) -> None:
    """Print `step_lines`; a malformed metrics line is said on stderr instead (the run itself succeeded)."""
    try:
        lines = step_lines(metrics_file, metrics, digits)
    except UserInputError as error:
        print(f"medplay {command}: no per-step summary: {error}", file=sys.stderr)
        return
    for line in lines:
        print(line)


def run(args: argparse.Namespace) -> int:
    """Train, then print the per-step summary and where the checkpoint, the metrics file and the log are.

    A failed run ends with one line on stderr naming its cause; the traceback is in the run's log. Out of GPU
    memory, the line names the phase, verl's memory figures and the knobs; out of host RAM, what to lower; the
    exit status of both is 4. The exit statuses: docs/troubleshooting.md, "Exit statuses of medplay train".
    With `medplay.watchdog.enabled`, this process is the run's watchdog and the training runs in a child of it.
    """
    from medical_team.launcher.failures.run_errors import end_run, failure_report
    from medical_team.launcher.launch import train
    from medical_team.launcher.watched_run import end_with_watchdog, in_attempt, watched_run

    report = probe_report_path(args)
    overrides = with_profile(user_overrides(args, args.overrides), report)
    if in_attempt():
        end_with_watchdog()
    else:
        print(f"medplay train: {' '.join(redacted_overrides(overrides))}", flush=True)
        watched = watched_run(overrides, verbose=args.verbose)
        if watched is not None:  # this process watches; the run trains in a child (docs/reliability.md)
            from medical_team.run_folder.run_lock import release_run_lock
            from medical_team.watchdog.supervisor import become_watchdog

            try:
                return become_watchdog(watched)
            finally:
                release_run_lock(watched.output_dir)
    try:
        paths = train(overrides, verbose=args.verbose)
    except UserInputError:
        raise
    except Exception as error:  # noqa: BLE001 - one line naming the cause; the traceback is in the run's log
        end_run(*failure_report(error))
    print_step_lines("train", paths.metrics_file, SUMMARY_METRICS, digits=3)
    step = paths.latest_step_file.read_text().strip() if paths.latest_step_file.is_file() else "none"
    print(f"checkpoints: {paths.checkpoint_dir} (latest step: {step})")
    print(f"metrics: {paths.metrics_file}")
    print(f"log: {paths.log_file}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `medplay train`."""
    parser = subparsers.add_parser(
        "train",
        help="self-play training with verl (profile=cpu-smoke|24g|48g|80g|96g|141g, Hydra overrides)",
        description="Train with verl. Arguments are Hydra overrides of configs/medplay.yaml, e.g. "
        f"`profile=24g trainer.total_training_steps=100`. {PROFILE_CHOICE}",
    )
    parser.add_argument(
        "--verbose", action="store_true", help="stream the run's full log (verl, Ray, vLLM) to the terminal as well"
    )
    add_profile_arguments(parser)
    parser.set_defaults(run=run)
