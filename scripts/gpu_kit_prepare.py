"""The GPU kit's work folder and its prepare phase: MEDEC data, the policy and the served judge, built once.

The work folder keeps what phases leave for later ones (data, models, run folders, summaries); scripts/gpu_kit.py
runs the phases.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Kit:
    """Where a phase reads and writes, and on which device."""

    cpu: bool
    work: Path  # what phases leave for later ones: data, models, run folders, summaries
    out: Path  # this phase's files (at most 8)
    steps: int
    limit_s: float  # the whole phase
    extra: tuple[str, ...] = ()  # more Hydra overrides for every run

    @property
    def model(self) -> Path:
        return self.work / ("tiny-qwen3" if self.cpu else "qwen3-4b-random")

    @property
    def judge(self) -> Path:
        """The served judge: on a GPU a random model of MedGemma 4B's architecture, on the CPU the tiny policy."""
        return self.model if self.cpu else self.work / "medgemma-4b-random"


def medplay_command() -> str:
    """The `medplay` on PATH (a wheelhouse install's env.sh puts it there), else the one beside this Python."""
    found = shutil.which("medplay")
    return found or str(Path(sys.executable).with_name("medplay"))


def prepare(kit: Kit) -> dict[str, Any]:
    """MEDEC data, policy and judge, built once: GPU random Qwen3-4B and MedGemma-4B shapes, CPU the tiny policy."""
    started = time.monotonic()
    data = kit.work / "data"
    if not (data / "train.parquet").is_file():
        with open(kit.out / "console.txt", "ab") as console:
            subprocess.run([medplay_command(), "convert", "--output", str(data)], check=True, stdout=console)
    if not (kit.model / "config.json").is_file():
        if kit.cpu:
            from medical_team.models.tiny import build_tiny_model

            build_tiny_model(kit.model)
        else:
            from medical_team.bench.gpu_policy import TOKENIZER_INSTALL, build_random_qwen3_4b, qwen3_tokenizer_dir

            tokenizer_dir = qwen3_tokenizer_dir()
            if tokenizer_dir is None:
                raise SystemExit(f"gpu_kit: the real Qwen3 tokenizer is not installed: {TOKENIZER_INSTALL}")
            build_random_qwen3_4b(kit.model, tokenizer_dir)
    if not (kit.judge / "config.json").is_file():
        from medical_team.models import gemma3
        from medical_team.models.gemma3_tokenizer import judge_tokenizer

        tokenizer = judge_tokenizer(kit.work / "scratch")
        gemma3.build_random_judge(kit.judge, tokenizer, gemma3.judge_config(tokenizer), "cuda", "bfloat16")
    return {
        "data": str(data),
        "model": str(kit.model),
        "judge": str(kit.judge),
        "prepare_s": round(time.monotonic() - started, 1),
    }
