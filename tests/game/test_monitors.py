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
    traces = [GameTrace("a b", "a c", 10, 64, 64), GameTrace("a b", None, None, 20, 64)]
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
        collapse_monitors([], [GameTrace("a", None, None, 1, 2)], MAX_REWRITES)
