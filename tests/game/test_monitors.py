"""Collapse monitors and their alarm: exact values on small inputs, and a degenerate attacker tripping the alarm.

The degenerate attacker writes the same note for every seed; its games are played by the real game
driver with the real rules judge on real MEDEC seeds, and the real alarm watches the monitors.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Sequence
from pathlib import Path

import pytest
from spec_names import MONITOR_METRICS

from medical_team.configs import packaged_section
from medical_team.data.medec import load_medec
from medical_team.data.seeds import build_seeds
from medical_team.game import GameConfig, play_batch, settle
from medical_team.game.alarm import ALARMS, AlarmAction, AlarmRule, CollapseAlarm, alarm_rules
from medical_team.game.monitors import (
    GameTrace,
    MonitorReading,
    collapse_monitors,
    distinct_n,
    edit_distance,
    monitor_names,
    p90,
    self_bleu,
    words,
)
from medical_team.game.prompts import Message
from medical_team.judge.rules import RulesJudge

CAP = 64
MAX_REWRITES = 64  # configs/medplay.yaml: medplay.monitors.self_bleu_max_rewrites
SAME_REWRITE = "A 54-year-old woman presents with chest pain; aspirin was given and she was discharged home."
# Assessor responses as a policy writes them: a readable ERROR, a readable NO_ERROR, an unreadable answer.
ANSWERS = {
    "ERROR": "Looks wrong. </think> <answer> verdict: ERROR </answer>",
    "NO_ERROR": "Looks right. </think> <answer> verdict: NO_ERROR </answer>",
    "unreadable": "no tags at all",
}


def test_names_are_the_documented_ones() -> None:
    assert list(monitor_names()) == MONITOR_METRICS
    assert {monitor for monitor, _ in ALARMS.values()} <= set(monitor_names())


def test_distinct_n_counts_unique_ngrams_over_all_texts() -> None:
    a, b = words("the cat sat"), words("the cat ran")
    assert distinct_n([a, b], 1) == pytest.approx(4 / 6)
    assert distinct_n([a, b], 2) == pytest.approx(3 / 4)
    assert distinct_n([a, a, a], 2) == pytest.approx(2 / 6)
    assert distinct_n([], 1) == 0.0


def test_self_bleu_is_one_for_copies_and_low_for_unrelated_texts() -> None:
    same = [words(SAME_REWRITE)] * 5
    assert self_bleu(same, MAX_REWRITES) == pytest.approx(1.0)
    unrelated = [words("alpha beta gamma delta epsilon"), words("one two three four five six"), words("red green blue")]
    assert self_bleu(unrelated, MAX_REWRITES) < 0.05
    assert self_bleu([words(SAME_REWRITE)], MAX_REWRITES) == 0.0  # one text has nothing to be compared with
    assert self_bleu(same + unrelated, max_texts=5) == pytest.approx(1.0)  # only the first five are compared


def test_edit_distance_is_zero_for_a_copy_and_one_for_nothing_shared() -> None:
    seed = words(SAME_REWRITE)
    assert edit_distance(seed, seed) == 0.0
    assert edit_distance(seed, words("entirely unrelated")) == 1.0
    assert 0.0 < edit_distance(seed, words(SAME_REWRITE.replace("aspirin", "heparin"))) < 0.1


def test_p90_is_the_nearest_rank() -> None:
    assert p90(list(range(1, 11))) == 9.0
    assert p90([5]) == 5.0
    assert p90([]) == 0.0


class DegenerateAttacker:
    """A generator whose attacker writes the same note whatever the seed; the assessor always answers ERROR."""

    def __init__(self, rewrite: str) -> None:
        self.rewrite = rewrite

    def generate(self, prompts: Sequence[list[Message]]) -> list[str]:
        """One response per prompt."""
        return [
            f"Subtle. </think> <answer> {self.rewrite} </answer>"
            if "You are the Attacker" in prompt[0]["content"]
            else "Looks wrong. </think> <answer> verdict: ERROR </answer>"
            for prompt in prompts
        ]


@pytest.fixture(scope="module")
def seeds() -> list:
    """The bundled MEDEC seeds."""
    resource = importlib.resources.files("medical_team.data.resources")
    csv = Path(str(resource / "MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"))
    return build_seeds(load_medec(csv).notes, seed=0)


def play_step(seeds: list, step: int, rewrite: str | None) -> MonitorReading:
    """One step of 8 games with the degenerate attacker (or one that copies each seed when `rewrite` is None)."""
    adversarial = [s for s in seeds if s.category.adversarial][4 * step : 4 * step + 4]
    chosen = adversarial + [s for s in seeds if not s.category.adversarial][4 * step : 4 * step + 4]
    generator = DegenerateAttacker(rewrite) if rewrite else CopyingAttacker()
    batch = play_batch(chosen, generator, RulesJudge(), GameConfig())
    # response lengths in words: these generators have no tokenizer
    traces = [game.trace(lambda turn: len(turn.response.split()), CAP) for game in batch.games]
    return collapse_monitors([game.outcome for game in batch.games], traces, MAX_REWRITES)


class CopyingAttacker(DegenerateAttacker):
    """The attacker hands back the seed note unchanged."""

    def __init__(self) -> None:
        super().__init__("")

    def generate(self, prompts: Sequence[list[Message]]) -> list[str]:
        """The seed note (after the prompt's `Clinical note:` line) for the attacker; ERROR for the assessor."""
        out = super().generate(prompts)
        for i, prompt in enumerate(prompts):
            if "You are the Attacker" in prompt[0]["content"]:
                note = prompt[-1]["content"].split("Clinical note:\n", 1)[1]
                out[i] = f"Copy. </think> <answer> {note} </answer>"
        return out


def test_degenerate_attacker_reads_as_collapsed(seeds: list) -> None:
    reading = play_step(seeds, 0, SAME_REWRITE)
    assert set(reading.values) == set(monitor_names()) and set(reading.measured) == set(monitor_names())
    assert reading.values["attacker/self_bleu"] == pytest.approx(1.0)
    assert reading.values["attacker/distinct_1"] == pytest.approx(distinct_n([words(SAME_REWRITE)], 1) / 4)
    assert reading.values["attacker/copy_rate"] == 0.0 and reading.values["attacker/edit_distance"] > 0.5
    assert reading.values["assessor/majority_verdict_share"] == 1.0  # ERROR every time
    assert reading.values["attacker/response_length/clip_rate"] == 0.0


def test_copying_attacker_reads_as_identical_copies(seeds: list) -> None:
    reading = play_step(seeds, 0, None)
    assert reading.values["attacker/copy_rate"] == 1.0
    assert reading.values["attacker/edit_distance"] == 0.0


def test_degenerate_attacker_trips_the_diversity_alarm_after_patience_steps(seeds: list) -> None:
    alarm = CollapseAlarm(alarm_rules({"max_self_bleu": 0.9, "min_distinct_2": None}), patience=3)
    fired = [alarm.observe(play_step(seeds, step, SAME_REWRITE)) for step in range(3)]
    assert fired[0] == [] and fired[1] == []
    assert [f.rule.name for f in fired[2]] == ["max_self_bleu"]
    assert fired[2][0].steps == 3 and fired[2][0].value == pytest.approx(1.0)
    assert alarm.streak_metrics() == {"alarm/max_self_bleu": 3.0}
    message = fired[2][0].message(7, AlarmAction.STOP)
    assert message.startswith("medplay: collapse alarm at step 7: attacker/self_bleu = 1, above 0.9")
    assert "medplay.monitors.alarms.max_self_bleu" in message and "stopping" in message


def test_a_diverse_step_resets_the_run_and_an_unmeasured_one_does_not(seeds: list) -> None:
    alarm = CollapseAlarm([AlarmRule("max_self_bleu", 0.9)], patience=2)
    assert alarm.observe(play_step(seeds, 0, SAME_REWRITE)) == []
    unmeasured = MonitorReading(dict.fromkeys(monitor_names(), 0.0), frozenset())
    assert alarm.observe(unmeasured) == [] and alarm.streak["max_self_bleu"] == 1
    diverse = MonitorReading(
        {**dict.fromkeys(monitor_names(), 0.0), "attacker/self_bleu": 0.2}, frozenset(monitor_names())
    )
    assert alarm.observe(diverse) == [] and alarm.streak["max_self_bleu"] == 0


def test_lengths_and_the_cap(seeds: list) -> None:
    vanilla = next(s for s in seeds if not s.category.adversarial)
    unreadable = settle(vanilla, None, "no tags at all", None, GameConfig())
    traces = [GameTrace("a b", "a c", 10, 64, 64, ""), GameTrace("a b", None, None, 20, 64, "")]
    reading = collapse_monitors([unreadable, unreadable], traces, MAX_REWRITES)
    assert reading.values["attacker/response_length/mean"] == 10.0
    assert reading.values["assessor/response_length/mean"] == 42.0
    assert reading.values["assessor/response_length/p90"] == 64.0
    assert reading.values["assessor/response_length/clip_rate"] == 0.5
    assert reading.values["attacker/response_length/clip_rate"] == 0.0
    assert "assessor/majority_verdict_share" not in reading.measured  # no readable verdict
    assert "attacker/self_bleu" not in reading.measured  # one rewrite cannot be compared


def test_unknown_alarm_and_bad_patience_are_errors() -> None:
    with pytest.raises(ValueError, match="unknown alarm"):
        alarm_rules({"max_selfbleu": 0.9})
    with pytest.raises(ValueError, match="patience"):
        CollapseAlarm([], patience=0)
    with pytest.raises(ValueError, match="traces"):
        collapse_monitors([], [GameTrace("a", None, None, 1, 2, "")], MAX_REWRITES)


def verdict_step(seeds: list, *answers: str) -> MonitorReading:
    """The monitors of one step of vanilla games settled by the real game code, one per answer (keys of ANSWERS)."""
    vanilla = [s for s in seeds if not s.category.adversarial][: len(answers)]
    played = zip(vanilla, answers, strict=True)
    outcomes = [settle(seed, None, ANSWERS[answer], None, GameConfig()) for seed, answer in played]
    traces = [
        GameTrace(seed.text, None, None, 8, CAP, ANSWERS[answer])
        for seed, answer in zip(vanilla, answers, strict=True)
    ]
    return collapse_monitors(outcomes, traces, MAX_REWRITES)


def test_error_verdict_share_counts_readable_verdicts_only(seeds: list) -> None:
    reading = verdict_step(seeds, "ERROR", "ERROR", "unreadable", "ERROR", "NO_ERROR")
    assert reading.values["assessor/error_verdict_share"] == 0.75  # 3 ERROR of 4 readable: the unreadable one is out
    assert reading.values["assessor/majority_verdict_share"] == 0.75
    assert "assessor/error_verdict_share" in reading.measured
    lone = verdict_step(seeds, "ERROR", "unreadable", "unreadable")  # one readable verdict: not measured
    assert lone.values["assessor/error_verdict_share"] == 0.0 and "assessor/error_verdict_share" not in lone.measured


def test_error_share_alarms_fire_strictly_outside_their_thresholds(seeds: list) -> None:
    rules = {r.name: r for r in alarm_rules({"min_error_verdict_share": 0.25, "max_error_verdict_share": 0.75})}
    assert {name: rule.monitor for name, rule in rules.items()} == dict.fromkeys(rules, "assessor/error_verdict_share")
    at_max = verdict_step(seeds, "ERROR", "ERROR", "ERROR", "NO_ERROR").values["assessor/error_verdict_share"]
    assert at_max == 0.75 and not rules["max_error_verdict_share"].past(at_max)
    low = verdict_step(seeds, "ERROR", *["NO_ERROR"] * 4).values["assessor/error_verdict_share"]
    assert low == 0.2 and rules["min_error_verdict_share"].past(low) and not rules["max_error_verdict_share"].past(low)
    high = verdict_step(seeds, *["ERROR"] * 4, "NO_ERROR").values["assessor/error_verdict_share"]
    assert high == 0.8 and rules["max_error_verdict_share"].past(high)


def test_two_steps_onto_no_error_fire_the_packaged_alarm_at_the_second(seeds: list) -> None:
    monitors = packaged_section()["monitors"]
    assert monitors["patience"] == 2
    thresholds = monitors["alarms"]
    assert (thresholds["min_error_verdict_share"], thresholds["max_error_verdict_share"]) == (0.25, 0.75)
    alarm = CollapseAlarm(alarm_rules(thresholds), monitors["patience"])
    onto_no_error = ("ERROR", *["NO_ERROR"] * 4)  # ERROR share 0.2; majority 0.8, below its 0.95
    assert alarm.observe(verdict_step(seeds, *onto_no_error)) == []
    assert alarm.streak["min_error_verdict_share"] == 1
    fired = alarm.observe(verdict_step(seeds, *onto_no_error))
    assert [(f.rule.name, f.value, f.steps) for f in fired] == [("min_error_verdict_share", 0.2, 2)]
    assert fired[0].message(2, AlarmAction.WARN) == (
        "medplay: collapse alarm at step 2: assessor/error_verdict_share = 0.2, below 0.25 "
        "(medplay.monitors.alarms.min_error_verdict_share) for 2 steps in a row; training goes on"
    )


def test_an_unmeasured_verdict_step_neither_counts_nor_breaks_the_run(seeds: list) -> None:
    monitors = packaged_section()["monitors"]
    alarm = CollapseAlarm(alarm_rules(monitors["alarms"]), monitors["patience"])
    onto_no_error = ("ERROR", *["NO_ERROR"] * 4)
    assert alarm.observe(verdict_step(seeds, *onto_no_error)) == []
    assert alarm.observe(verdict_step(seeds, "NO_ERROR", "unreadable", "unreadable")) == []  # one readable verdict
    assert alarm.streak["min_error_verdict_share"] == 1
    fired = alarm.observe(verdict_step(seeds, *onto_no_error))
    assert [(f.rule.name, f.steps) for f in fired] == [("min_error_verdict_share", 2)]
