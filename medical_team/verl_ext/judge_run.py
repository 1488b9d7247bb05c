"""What a run says about its judge: a missing model stops it before Ray, `rules` is warned about and recorded."""

from __future__ import annotations

import json
from pathlib import Path

from omegaconf import DictConfig

from medical_team.console import say
from medical_team.judge.settings import MODEL_JUDGE_BACKENDS, JudgeSettings
from medical_team.verl_ext.served_judge import resolve_judge_model

RECORD_NAME = "judge.json"
RULES_WARNING = (
    "judge backend is `rules`: no model reads the rewrites (an adversarial game takes the attacker's intended "
    "label), so this run's attacker and assessor figures are not judged; use it for smoke tests only"
)


def check_judge(judge: JudgeSettings) -> None:
    """Fail before Ray starts when the served judge's model folder is missing; warn about `rules`."""
    if judge.backend == "vllm":
        resolve_judge_model(judge.model or "")
    if judge.backend == "rules":
        say(f"medplay: warning: {RULES_WARNING}", err=True)


def record_judge(config: DictConfig) -> Path:
    """Write `judge.json` (backend, model, endpoint, whether a model judged) beside the run's config.yaml."""
    judge = config.medplay.judge
    record = {
        "judge/backend": str(judge.backend),
        "judge/model": judge.model,
        "judge/base_url": judge.base_url,
        "judge/url": judge.url,
        "judged_by_model": judge.backend in MODEL_JUDGE_BACKENDS,
    }
    if judge.backend == "rules":
        record["warning"] = RULES_WARNING
    path = Path(config.medplay.output_dir) / RECORD_NAME
    path.write_text(json.dumps(record, indent=2) + "\n")
    return path
