"""supervisord event listener `pipeline-exit`: shut supervisord down once the pipeline has ended.

The pipeline writes its own exit status; when it could not (killed by SIGKILL, or it never started), this
listener records one before shutting supervisord down, so the container never idles after the pipeline.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from supervisor import childutils

PIPELINE = "pipeline"
# Recorded when supervisord could not start the pipeline at all (FATAL state).
NOT_STARTED_STATUS = 70
# Recorded when the pipeline was killed by a signal (supervisord reports -1 then): the shell's 128 + SIGKILL.
KILLED_STATUS = 137


def record_status(run_dir: Path, status: int, reason: str) -> None:
    """Write the status unless the pipeline already did, and say why on stderr (the listener's log)."""
    status_file = run_dir / "pipeline.status"
    if not status_file.exists():
        status_file.write_text(f"{status}\n")
    print(f"pipeline-exit: {reason}; shutting supervisord down", file=sys.stderr, flush=True)


def main() -> None:
    """Answer supervisord's events forever, acknowledging each one."""
    run_dir = Path(os.environ["MEDPLAY_RUN_DIR"])
    rpc = childutils.getRPCInterface(os.environ)
    while True:
        headers, payload = childutils.listener.wait(sys.stdin, sys.stdout)
        event, _ = childutils.eventdata(payload + "\n")
        if event.get("processname") == PIPELINE:
            if headers["eventname"] == "PROCESS_STATE_EXITED":
                status = rpc.supervisor.getProcessInfo(PIPELINE)["exitstatus"]
                record_status(run_dir, status if status >= 0 else KILLED_STATUS, f"the pipeline exited ({status})")
            else:
                record_status(run_dir, NOT_STARTED_STATUS, "the pipeline could not be started")
            rpc.supervisor.shutdown()
        childutils.listener.ok(sys.stdout)


if __name__ == "__main__":
    main()
