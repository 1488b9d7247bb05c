"""Rule checks and the model-free `rules` judge on real MEDEC seeds."""

from __future__ import annotations

import pytest
from judge_helpers import make_request, reworded

from medical_team.common.vocab import Label
from medical_team.data.records import GameSeed
from medical_team.judge.rules import RulesJudge, check_rules
from medical_team.judge.settings import RuleSettings, packaged_judge_settings

RULES = packaged_judge_settings().rules


def test_empty_rewrite_is_unfaithful_and_error_free(harmful: GameSeed) -> None:
    verdict = check_rules(make_request(harmful, "  \n\t "), RULES).verdict
    assert verdict is not None
    assert (verdict.error_present, verdict.faithful, verdict.reason) == (False, False, "rule:empty_rewrite")


@pytest.mark.parametrize(
    ("which", "intended", "error_present", "faithful"),
    [
        ("harmful", Label.ERROR, True, True),  # the error is still there; nothing unintended changed
        ("benign", Label.ERROR, False, False),  # inject: no error was injected
        ("benign", Label.NO_ERROR, False, True),  # decoy: still correct
    ],
)
def test_copy_of_seed_keeps_its_truth(
    request: pytest.FixtureRequest, which: str, intended: Label, error_present: bool, faithful: bool
) -> None:
    seed: GameSeed = request.getfixturevalue(which)
    # whitespace differences do not make a rewrite
    copy = "  " + seed.text.replace(" ", "  ") + "\n"
    verdict = check_rules(make_request(seed, copy, intended), RULES).verdict
    assert verdict is not None
    assert (verdict.error_present, verdict.faithful) == (error_present, faithful)
    assert verdict.reason == "rule:identical_to_seed"
    assert verdict.error_sentence == (seed.error_sentence if error_present else None)


@pytest.mark.parametrize("factor", [0.3, 2.5])
def test_length_outside_band_is_unfaithful_but_leaves_error_open(harmful: GameSeed, factor: float) -> None:
    rewrite = (harmful.text * 3)[: int(len(harmful.text) * factor)]
    finding = check_rules(make_request(harmful, rewrite), RULES)
    assert finding.verdict is None
    assert finding.unfaithful_reason is not None and "length_ratio" in finding.unfaithful_reason


def test_reworded_note_is_undecided(harmful: GameSeed) -> None:
    finding = check_rules(make_request(harmful, reworded(harmful)), RULES)
    assert finding.verdict is None and finding.unfaithful_reason is None


def test_band_is_configurable(harmful: GameSeed) -> None:
    rewrite = harmful.text + " " + harmful.text[: len(harmful.text) // 2]  # ratio about 1.5
    assert check_rules(make_request(harmful, rewrite), RuleSettings(0.5, 1.2)).unfaithful_reason
    assert not check_rules(make_request(harmful, rewrite), RuleSettings(0.5, 1.6)).unfaithful_reason


def test_band_must_contain_one() -> None:
    with pytest.raises(ValueError, match="0 < min <= 1 <= max"):
        RuleSettings(min_length_ratio=1.5, max_length_ratio=2.0)


def test_rules_judge_takes_intended_label_when_undecidable(seed_pairs: list[tuple[GameSeed, GameSeed]]) -> None:
    judge = RulesJudge()
    harmful, benign = seed_pairs[1]
    requests = [
        make_request(harmful, reworded(harmful), Label.ERROR),
        make_request(benign, reworded(benign), Label.ERROR),
        make_request(benign, reworded(benign), Label.NO_ERROR),
        make_request(benign, ""),
        make_request(benign, benign.text * 3, Label.NO_ERROR),
    ]
    verdicts = judge.judge(requests)
    assert [(v.error_present, v.faithful) for v in verdicts] == [
        (True, True),
        (True, True),
        (False, True),
        (False, False),
        (False, False),  # too long: unfaithful, error taken from the intended label
    ]
    assert verdicts[0].error_sentence == harmful.error_sentence
    assert verdicts[1].error_sentence is None  # an injected error can be anywhere
    assert "low fidelity" in verdicts[0].reason
    assert not any(v.tie for v in verdicts)
    metrics = judge.stats.metrics()
    assert metrics["judge/calls"] == 5
    assert metrics["judge/parse_error_rate"] == 0.0
    assert judge.stats.rule_decisions == 2  # the empty rewrite and the over-long one
