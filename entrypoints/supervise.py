"""`train` of the entrypoint: hand the overrides to the pipeline, run supervisord here, exit with the pipeline's status.

The entrypoint execs `python entrypoints/supervise.py [OVERRIDES...]`, so this process is supervisord: signals such as
`docker stop`'s SIGTERM reach supervisord's own handlers unchanged (supervisord itself always exits 0).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from supervisor import supervisord

# What the container reports when the pipeline ended without recording a status (e.g. it was SIGKILLed).
NO_STATUS = 1
# Exit status of a usage error (a bad override), as `medplay` uses.
USAGE = 2
# supervisord waits this much longer than the trainer's own stop grace before SIGKILL, so the trainer's deadline comes first.
STOP_WAIT_MARGIN_S = 60
CONFIGURATION = Path(__file__).resolve().parent / "supervisord.conf"


def pipeline_status(run_dir: Path) -> int:
    """The exit status the pipeline (or the pipeline-exit listener) recorded, or NO_STATUS."""
    status_file = run_dir / "pipeline.status"
    try:
        return int(status_file.read_text().strip())
    except (OSError, ValueError):
        print(f"supervise: no pipeline exit status in {status_file}; exiting with {NO_STATUS}", file=sys.stderr)
        return NO_STATUS


def write_overrides(run_dir: Path, overrides: list[str]) -> None:
    """The Hydra overrides, one per line, for the pipeline (supervisord passes no arguments to its programs)."""
    for override in overrides:
        if "\n" in override:
            raise ValueError(f"a Hydra override cannot contain a line break: {override!r}")
    (run_dir / "train.args").write_text("".join(f"{override}\n" for override in overrides))


def stop_wait_s(overrides: list[str]) -> int:
    """Seconds supervisord gives the pipeline after SIGTERM: the composed medplay.stop_grace_s plus a margin.

    Read unchecked: the probe checks the settings once it has chosen the profile (the first step of the pipeline).
    """
    settings_file = Path(os.environ["MEDPLAY_RUN_CONFIG"])
    from_file = ["--config", str(settings_file)] if settings_file.is_file() else []
    command = ["medplay", "config", "get", "--unchecked", *from_file, "medplay.stop_grace_s", *overrides]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ValueError(done.stderr.strip() or f"{' '.join(command)} exited with {done.returncode}")
    grace = done.stdout.strip()
    try:
        return int(float(grace)) + STOP_WAIT_MARGIN_S
    except ValueError:
        raise ValueError(f"medplay.stop_grace_s must be a number of seconds, got {grace!r}") from None


def main(overrides: list[str]) -> int:
    """Prepare the run folder, run supervisord until it shuts down, and return the pipeline's status."""
    run_dir = Path(os.environ["MEDPLAY_RUN_DIR"])
    run_dir.mkdir(parents=True, exist_ok=True)
    (Path(os.environ["MEDPLAY_LOGS"]) / "supervisor").mkdir(parents=True, exist_ok=True)
    try:
        write_overrides(run_dir, overrides)
        os.environ["MEDPLAY_STOP_WAIT_S"] = str(stop_wait_s(overrides))
    except ValueError as error:
        print(f"entrypoint: error: {error}", file=sys.stderr)
        return USAGE
    (run_dir / "pipeline.status").unlink(missing_ok=True)
    supervisord.main(["--configuration", str(CONFIGURATION)])
    return pipeline_status(run_dir)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
