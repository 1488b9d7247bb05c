"""What a run says about its judge: `rules` is warned about, and every run records which judge it used."""

from __future__ import annotations

import json
from pathlib import Path

from omegaconf import DictConfig

from medical_team.common.errors import UserInputError
from medical_team.judge.judge_kinds import backend_kind
from medical_team.judge.settings import JudgeSettings, missing_judge_fields
from medical_team.launcher.console.console import say

RECORD_NAME = "judge.json"
RULES_WARNING = (
    "judge backend is `rules`: no model reads the rewrites (an adversarial game takes the attacker's intended "
    "label), so this run's attacker and assessor figures are not judged; use it for smoke tests only"
)


def check_judge(judge: JudgeSettings) -> None:
    """Refuse a judge server without its URL; warn about `rules` (a missing served-judge folder stops the run in the
    run plan, served_judge_address)."""
    missing = missing_judge_fields(judge.kind, vars(judge), later_ok=False)
    if missing:
        field, message = missing
        raise UserInputError(message, field=f"medplay.judge.{field}")
    if not judge.kind.judged_by_model:
        say(f"medplay: warning: {RULES_WARNING}", err=True)


def record_judge(config: DictConfig) -> Path:
    """Write `judge.json` (backend, model, endpoint, whether a model judged) beside the run's config.yaml."""
    judge = config.medplay.judge
    judged_by_model = backend_kind(judge.backend).judged_by_model
    record = {
        "judge/backend": str(judge.backend),
        "judge/model": judge.model,
        "judge/url": judge.url,
        "judged_by_model": judged_by_model,
    }
    if not judged_by_model:
        record["warning"] = RULES_WARNING
    path = Path(config.medplay.output_dir) / RECORD_NAME
    path.write_text(json.dumps(record, indent=2) + "\n")
    return path
