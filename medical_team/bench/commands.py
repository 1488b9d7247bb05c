"""The `medplay` command lines the benchmarks start their runs with."""

from __future__ import annotations

import sys
from pathlib import Path

# `medplay` installed beside this interpreter (a virtual environment's bin/, the image's).
MEDPLAY = str(Path(sys.executable).with_name("medplay"))
# `medplay ARGS` in this interpreter, so that the checkout's code on PYTHONPATH wins over an installed one.
MEDPLAY_CODE = "import sys; from medical_team.cli import main; sys.exit(main(sys.argv[1:]))"


def medplay_script(*args: str) -> list[str]:
    """The command line of the `medplay` CLI installed next to this interpreter."""
    return [MEDPLAY, *args]


def medplay_here(*args: str) -> list[str]:
    """The command line of `medplay ARGS` in this interpreter (the checkout's code on PYTHONPATH wins)."""
    return [sys.executable, "-c", MEDPLAY_CODE, *args]
