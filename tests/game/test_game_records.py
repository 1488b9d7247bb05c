"""A step's game records: which games are kept (bounded, in turns per category, whatever the finishing order),
the JSON line format, and a malformed file named by file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_run import EditingPolicy, step_seeds

from medical_team.common.errors import UserInputError
from medical_team.common.vocab import Category
from medical_team.game.batch import play_batch
from medical_team.game.game_records import read_game_records, records_text, step_file, step_records
from medical_team.judge.rules import RulesJudge


@pytest.fixture(scope="module")
def played() -> tuple[list, list]:
    """Twelve real games, three of each category: their outcomes and traces."""
    batch = play_batch(step_seeds(2), EditingPolicy(), RulesJudge())
    return [g.outcome for g in batch.games], [g.trace(lambda turn: len(turn.response), 64) for g in batch.games]


def test_the_pick_is_bounded_takes_turns_per_category_and_ignores_finishing_order(played) -> None:
    outcomes, traces = played
    records = step_records(7, outcomes, traces, 6)
    # six of twelve: one of each category, then the next of the first two categories: the adversarial ones
    assert [r.outcome.category for r in records] == [
        Category.ADVERSARIAL_HARMFUL,
        Category.ADVERSARIAL_HARMFUL,
        Category.ADVERSARIAL_BENIGN,
        Category.ADVERSARIAL_BENIGN,
        Category.VANILLA_HARMFUL,
        Category.VANILLA_BENIGN,
    ]
    for category in Category:
        ids = sorted(o.note_id for o in outcomes if o.category is category)
        kept = [r.outcome.note_id for r in records if r.outcome.category is category]
        assert kept == ids[: len(kept)]  # each category's first notes by id
    assert step_records(7, outcomes[::-1], traces[::-1], 6) == records
    assert len(step_records(7, outcomes, traces, 100)) == len(outcomes)
    assert step_records(7, outcomes, traces, 0) == []


def test_a_record_holds_the_texts_the_game_was_settled_on(played) -> None:
    outcomes, traces = played
    records = step_records(7, outcomes, traces, 100)
    for record in records:
        trace = traces[outcomes.index(record.outcome)]
        assert (record.step, record.note, record.rewrite) == (7, trace.seed_text, trace.rewrite)
        assert record.assessor_response == trace.assessor_response and "</answer>" in record.assessor_response
        assert (record.rewrite is None) == (not record.outcome.adversarial)
    line = json.loads(records_text(records[-1:]))
    assert line["step"] == 7 and line["note_id"] == records[-1].outcome.note_id
    assert line["attacker_reward"] == records[-1].outcome.attacker_reward
    assert line["assessor_reward"] == records[-1].outcome.assessor_reward


def test_games_without_their_texts_are_not_picked(played) -> None:
    outcomes, traces = played
    records = step_records(1, outcomes, [None, *traces[1:]], 100)
    assert len(records) == len(outcomes) - 1
    assert outcomes[0] not in [r.outcome for r in records]


def test_records_read_back_as_written(played, tmp_path: Path) -> None:
    outcomes, traces = played
    records = step_records(3, outcomes, traces, 5)
    step_file(tmp_path, 3).write_text(records_text(records))
    (tmp_path / ".step_4.jsonl.tmp").write_text("a write the trainer was killed in")
    assert read_game_records(tmp_path) == {3: records}
    assert read_game_records(tmp_path / "missing") == {}


def _line(played, **changes) -> str:
    outcomes, traces = played
    record = json.loads(records_text(step_records(1, outcomes, traces, 1)))
    record.update(changes)
    return json.dumps({k: v for k, v in record.items() if v != "DROP"})


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"step": 2}, "step", "expected 1"),
        ({"step": True}, "step", "expected 1"),
        ({"note": "DROP"}, "note", "missing"),
        ({"judge_reason": "DROP"}, "judge_reason", "missing"),
        ({"assessor_response": None}, "assessor_response", "expected a string"),
        ({"rewrite": 3}, "rewrite", "a string or null"),
        ({"category": "vanilla"}, "category", "expected one of vanilla_harmful"),
        ({"truth": "maybe"}, "truth", "or null"),
        ({"assessor_terms": {"correctness": "1"}}, "assessor_terms", "numbers"),
    ],
)
def test_a_malformed_record_is_named_by_file_line_and_field(played, tmp_path, changes, field, message) -> None:
    folder = tmp_path / "games"
    folder.mkdir()
    step_file(folder, 1).write_text(_line(played) + "\n" + _line(played, **changes) + "\n")
    with pytest.raises(UserInputError) as caught:
        read_game_records(folder)
    assert caught.value.one_line().startswith(f"games/step_1.jsonl:row 2: field '{field}': ")
    assert message in caught.value.message


def test_a_line_that_is_not_json_is_named(tmp_path: Path) -> None:
    step_file(tmp_path, 5).write_text("{not json\n")
    with pytest.raises(UserInputError, match=r"step_5.jsonl:row 1: field 'line': not valid JSON"):
        read_game_records(tmp_path)
