"""Run supervisord in this process, then exit with the pipeline's exit status (supervisord itself exits 0).

The entrypoint execs `python docker/supervise.py --configuration docker/supervisord.conf`, so this process is
supervisord: signals such as `docker stop`'s SIGTERM reach supervisord's own handlers unchanged.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from supervisor import supervisord

# What the container reports when the pipeline ended without recording a status (e.g. it was SIGKILLed).
NO_STATUS = 1


def pipeline_status(run_dir: Path) -> int:
    """The exit status the pipeline (or the pipeline-exit listener) recorded, or NO_STATUS."""
    status_file = run_dir / "pipeline.status"
    try:
        return int(status_file.read_text().strip())
    except (OSError, ValueError):
        print(f"supervise: no pipeline exit status in {status_file}; exiting with {NO_STATUS}", file=sys.stderr)
        return NO_STATUS


def main() -> int:
    """Run supervisord until it shuts down; return the pipeline's status."""
    supervisord.main(sys.argv[1:])
    return pipeline_status(Path(os.environ["MEDPLAY_RUN_DIR"]))


if __name__ == "__main__":
    sys.exit(main())
