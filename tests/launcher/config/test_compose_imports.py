"""Composing and checking the training config imports neither verl nor torch (seconds of `config get` and `probe`)."""

from __future__ import annotations

import subprocess
import sys

COMPOSE_AND_CHECK = """
import sys
from medical_team.launcher.config.compose import compose_config
from medical_team.launcher.config.verl_keys import check_config
check_config(compose_config(["profile=80g"]))
print(",".join(sorted(name for name in ("verl", "torch", "transformers", "ray", "vllm") if name in sys.modules)))
"""


def test_composing_and_checking_the_config_leaves_verl_and_torch_unimported() -> None:
    done = subprocess.run(
        [sys.executable, "-c", COMPOSE_AND_CHECK], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == ""  # Hydra finds verl's configs by path (configs/__init__.py), not by import
