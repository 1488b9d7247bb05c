"""The judge prompt shows seed, known error and rewrite; its strict answer format parses or becomes a tie."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from judge_helpers import make_request, reworded

from medical_team.common.vocab import Label
from medical_team.data.records import GameSeed
from medical_team.judge.prompt import judge_messages, parse_judge_output


def test_prompt_shows_seed_known_error_and_rewrite(harmful: GameSeed) -> None:
    rewrite = reworded(harmful)
    system, user = judge_messages(make_request(harmful, rewrite))
    assert system["role"] == "system" and "error_present: yes or no" in system["content"]
    text = user["content"]
    assert harmful.text in text and rewrite in text
    assert harmful.error_sentence in text and harmful.corrected_sentence in text and harmful.error_type in text
    assert text.index("ORIGINAL NOTE") < text.index("WHAT IS KNOWN") < text.index("REWRITTEN NOTE")


@pytest.mark.parametrize(("intended", "task"), [(Label.ERROR, "introduce exactly one"), (Label.NO_ERROR, "suspicious")])
def test_prompt_for_benign_seed_names_the_task(benign: GameSeed, intended: Label, task: str) -> None:
    text = judge_messages(make_request(benign, reworded(benign), intended))[1]["content"]
    assert "medically correct" in text and task in text


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("error_present: yes\nfaithful: no\nerror_sentence: He takes 500 g of aspirin.", (True, False)),
        ("ERROR_PRESENT: No\nFaithful: YES", (False, True)),
        ("**error_present:** yes\n**faithful:** yes", (True, True)),
        ("  error_present :  no.\n faithful: yes ", (False, True)),
        ('Reasoning first.\nerror_present: yes\nfaithful: yes\nerror_sentence: "Dose x."', (True, True)),
        ("error_present: yes\nfaithful: yes\nerror_present: yes", (True, True)),  # repeated, consistent
    ],
)
def test_well_formed_outputs_parse(output: str, expected: tuple[bool, bool]) -> None:
    verdict = parse_judge_output(output)
    assert not verdict.tie and not verdict.parse_error
    assert (verdict.error_present, verdict.faithful) == expected


def test_error_sentence_kept_only_with_an_error() -> None:
    assert parse_judge_output('error_present: yes\nfaithful: yes\nerror_sentence: "Give 5 g."').error_sentence == (
        "Give 5 g."
    )
    assert parse_judge_output("error_present: no\nfaithful: yes\nerror_sentence: Give 5 g.").error_sentence is None


def test_error_sentence_is_always_encodable() -> None:
    sentence = parse_judge_output("error_present: yes\nfaithful: yes\nerror_sentence: bad \ud800 text").error_sentence
    assert sentence is not None and sentence.encode("utf-8")


@pytest.mark.parametrize(
    "output",
    [
        "",
        "The note looks fine.",
        "error_present: yes",  # faithful missing
        "faithful: yes",  # error_present missing
        "error_present: maybe\nfaithful: yes",
        "error_present: yes\nfaithful: probably",
        "error_present: yes\nfaithful: yes\nerror_present: no",  # contradiction
        "error present: yes\nfaithful: yes",  # wrong key
        "error_present yes\nfaithful yes",  # no colon
    ],
)
def test_malformed_outputs_are_parse_error_ties(output: str) -> None:
    verdict = parse_judge_output(output)
    assert verdict.tie and verdict.parse_error
    assert verdict.error_present is None and verdict.faithful is None
    assert verdict.reason.startswith("judge output:")


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('error_pesntfaihl:yesno \n*`"YESNO')) | st.characters(), max_size=300))
def test_parser_never_raises_and_ties_iff_unparsed(text: str) -> None:
    verdict = parse_judge_output(text)
    assert verdict.tie == verdict.parse_error
    assert verdict.tie == (verdict.error_present is None)
    if not verdict.tie:
        assert verdict.faithful is not None
