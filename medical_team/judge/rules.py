"""Rule checks that settle easy adversarial games without a model, and the model-free `rules` judge."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from medical_team.common.vocab import Label
from medical_team.game.judging import JudgeRequest, JudgeVerdict
from medical_team.judge.settings import RuleSettings, packaged_judge_settings
from medical_team.judge.stats import JudgeCounters


@dataclass(frozen=True)
class RuleFinding:
    """What the rules know of one game: a final verdict, or only that it is unfaithful, or nothing."""

    verdict: JudgeVerdict | None = None
    unfaithful_reason: str | None = None  # set when a rule settles faithfulness but not error_present


def _normalized(text: str) -> str:
    return " ".join(text.split())


def check_rules(request: JudgeRequest, settings: RuleSettings) -> RuleFinding:
    """Apply the rule checks of docs/judge.md in order: empty rewrite, copy of the seed, length ratio band."""
    rewrite = _normalized(request.rewrite)
    seed = request.seed
    if not rewrite:
        return RuleFinding(JudgeVerdict(error_present=False, faithful=False, reason="rule:empty_rewrite"))
    if rewrite == _normalized(seed.text):
        # A copy keeps the seed's truth; it is faithful only when the seed already has the intended label
        # (harmful rewrite, benign decoy), not when an error had to be injected.
        error_present = seed.label is Label.ERROR
        return RuleFinding(
            JudgeVerdict(
                error_present=error_present,
                faithful=request.intended_label is seed.label,
                error_sentence=seed.error_sentence if error_present else None,
                reason="rule:identical_to_seed",
            )
        )
    ratio = len(rewrite) / max(len(_normalized(seed.text)), 1)
    if not settings.min_length_ratio <= ratio <= settings.max_length_ratio:
        return RuleFinding(
            unfaithful_reason=(
                f"rule:length_ratio {ratio:.2f} outside [{settings.min_length_ratio}, {settings.max_length_ratio}]"
            )
        )
    return RuleFinding()


def apply_unfaithful(verdict: JudgeVerdict, finding: RuleFinding) -> JudgeVerdict:
    """Force `faithful=False` on a backend's verdict when a rule found the rewrite unfaithful (ties stay ties)."""
    if finding.unfaithful_reason is None or verdict.tie:
        return verdict
    return replace(verdict, faithful=False, reason=f"{finding.unfaithful_reason}; {verdict.reason}")


class RulesJudge:
    """The model-free judge: rule checks, then the attacker's intended label for undecidable games.

    Low fidelity by design (a rewrite is assumed to realise what it was asked to); for tests and CPU demos.
    """

    def __init__(self, settings: RuleSettings | None = None) -> None:
        self.settings = settings or packaged_judge_settings().rules  # None: configs/medplay.yaml's bounds
        self.stats = JudgeCounters()

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """One verdict per request, in order."""
        start = time.perf_counter()
        verdicts = [self._judge_one(request) for request in requests]
        self.stats.record(verdicts, time.perf_counter() - start)
        return verdicts

    def _judge_one(self, request: JudgeRequest) -> JudgeVerdict:
        finding = check_rules(request, self.settings)
        if finding.verdict is not None:
            return finding.verdict
        keeps_seed_error = request.intended_label is Label.ERROR and request.seed.label is Label.ERROR
        assumed = JudgeVerdict(
            error_present=request.intended_label is Label.ERROR,
            faithful=True,
            # only a harmful rewrite's error sentence is known (an injected error is anywhere)
            error_sentence=request.seed.error_sentence if keeps_seed_error else None,
            reason="rules:intended_label (low fidelity: no model looked at the rewrite)",
        )
        return apply_unfaithful(assumed, finding)
