"""Every process of a run knows its run by its output folder, `MEDPLAY_RUN_FOLDER` in its environment.

configs/medplay.yaml sets it in the Ray workers' environment (`ray_kwargs.ray_init.runtime_env.env_vars`): the
watchdog finds a run's processes by it, the weight-sync socket is named after it, and the tests' phase hold reads the
run's progress record through it.
"""

from __future__ import annotations

import os
from pathlib import Path

RUN_FOLDER_ENV = "MEDPLAY_RUN_FOLDER"


def this_run_folder() -> Path | None:
    """The output folder of the run this process belongs to, None outside a run."""
    folder = os.environ.get(RUN_FOLDER_ENV)
    return Path(folder) if folder else None
