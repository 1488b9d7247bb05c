"""The game package stays framework-free: no verl, Ray, vLLM or judge backends behind its imports."""

from __future__ import annotations

import subprocess
import sys


def test_game_imports_no_framework_or_judge() -> None:
    code = (
        "import sys, medical_team.game, medical_team.game.hf_generator; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'verl', 'ray', 'vllm'} "
        "or m.startswith('medical_team.judge') or m.startswith('medical_team.verl_ext')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "[]"
