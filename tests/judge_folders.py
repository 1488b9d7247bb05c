"""Judge model folders a run plan accepts (`medplay.judge.model` must name a local Hugging Face folder)."""

from __future__ import annotations

import json
from pathlib import Path

# MedGemma 4B's config.json, as far as the memory plan reads it.
MEDGEMMA_CONFIG = {
    "text_config": {"vocab_size": 262208, "hidden_size": 2560, "intermediate_size": 10240, "num_hidden_layers": 34,
                    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256},
    "vision_config": {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27},
}  # fmt: skip


def medgemma_folder(parent: Path) -> Path:
    """A folder holding MedGemma 4B's config.json only: enough for the plan and the served-judge checks."""
    folder = parent / "medgemma-4b-it"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(MEDGEMMA_CONFIG))
    return folder


def served_judge_run(tmp_path: Path, *overrides: str):
    """cpu-smoke with the `vllm` judge on a model folder that exists, planned as `medplay train` plans it.

    Returns the planned run (the tests replace the server's command).
    """
    from medical_team.launcher.plan.run_plan import plan_run

    (tmp_path / "judge-model").mkdir(exist_ok=True)
    (tmp_path / "judge-model" / "config.json").write_text("{}")
    judge = ["medplay.judge.backend=vllm", f"medplay.judge.model={tmp_path / 'judge-model'}"]
    run = plan_run([*judge, f"medplay.output_dir={tmp_path}", *overrides])
    return run
