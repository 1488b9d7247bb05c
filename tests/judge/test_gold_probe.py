"""Gold probes: the rate they are mixed in at, how verdicts are scored, the floor, the config keys and the plot."""

from __future__ import annotations

import json

import pytest

from medical_team.cli import main
from medical_team.judge.gold import build_gold, medec_seeds
from medical_team.judge.gold_probe import PROBE_KINDS, GoldFloor, GoldProbes, JudgeGoldFloorError, count_correct
from medical_team.judge.rules import RulesJudge
from medical_team.launcher.failures.run_errors import one_line, run_stopping_cause


@pytest.fixture(scope="module")
def gold():
    """Gold items of the first 10 error notes of the train split."""
    return build_gold(medec_seeds("train"), 10)


@pytest.mark.parametrize(("fraction", "games", "expected"), [(0.25, 12, 3), (1.0, 5, 5), (0.0, 9, 0), (0.4, 10, 4)])
def test_probes_come_at_the_configured_share_of_games(gold, fraction, games, expected):
    probes = GoldProbes(gold, fraction)
    drawn = [item for _ in range(games) for item in probes.draw()]
    assert len(drawn) == expected
    assert all(item.kind in PROBE_KINDS for item in drawn)  # copies are settled by rules, never probed
    assert len({id(item) for item in drawn}) == len(drawn)


def test_probes_are_scored_on_both_answers(gold):
    items = [item for item in gold if item.kind in PROBE_KINDS]
    verdicts = RulesJudge().judge([item.request for item in items])
    both_right = [
        item
        for item, v in zip(items, verdicts)
        if v.error_present is item.error_present and v.faithful is item.faithful
    ]
    assert count_correct(items, verdicts) == len(both_right)
    assert 0 < len(both_right) < len(items)  # rules get injected errors right and removed ones wrong


def test_floor_waits_for_enough_probes_then_stops_with_one_line():
    floor = GoldFloor(floor=0.6, min_count=4)
    assert floor.observe(0, 0) == {"judge/gold_count": 0.0}  # no accuracy before any probe
    assert floor.observe(3, 1) == {"judge/gold_count": 3.0, "judge/gold_accuracy": pytest.approx(1 / 3)}
    floor.check(step=1)  # 3 probes: too few to judge the judge
    floor.observe(2, 1)
    with pytest.raises(JudgeGoldFloorError) as caught:
        floor.check(step=2)
    message = str(caught.value)
    assert message.startswith("step 2: judge gold accuracy 0.400 over 5 gold probes is below") and "\n" not in message
    assert run_stopping_cause(RuntimeError("ray task failed")) is None
    wrapped = RuntimeError("verl step failed")
    wrapped.__cause__ = caught.value
    assert one_line(run_stopping_cause(wrapped)) == message
    GoldFloor(floor=0.0, min_count=1, count=10, correct=0).check(step=3)  # floor 0: off


def test_report_plots_gold_accuracy_with_the_judge_reliability(tmp_path, capsys):
    path = tmp_path / "metrics.jsonl"
    records = [{"step": s, "data": {"game/tie_rate": 0.1, "judge/gold_accuracy": 0.5 + 0.1 * s, "judge/gold_count": 2.0 * s}}
               for s in (1, 2, 3)]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["report", "--metrics", str(path), "--output", str(tmp_path / "report")]) == 0
    page = (tmp_path / "report" / "report.md").read_text()
    assert "Series: tie rate, judge gold accuracy." in page
