"""A prompt over its token budget loses its note's end, never its instructions or chat markup (real tiny tokenizer).

.venv/bin/python -m pytest -q tests/game/test_prompt_fit.py
"""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from medical_team.common.vocab import Category, Label
from medical_team.data.records import GameSeed
from medical_team.game.prompt_fit import InstructionsTooLongError, fit_prompt, prompt_ids
from medical_team.game.prompts import (
    NOTE_HEADING,
    THINKING_PREFIX,
    assessor_messages,
    attacker_messages,
    note_of,
    render_prompt,
    with_note,
)

SENTENCE = "The patient reports intermittent chest pain radiating to the left arm on exertion. "
LONG_NOTE = (SENTENCE * 600)[:48_240]  # the length of the note `medplay convert` once accepted without a word


@pytest.fixture(scope="module")
def tokenizer(tiny_qwen2_dir):
    return AutoTokenizer.from_pretrained(tiny_qwen2_dir)


def harmful_seed(text: str) -> GameSeed:
    return GameSeed(
        note_id="long-1",
        pair_id="long-1",
        category=Category.ADVERSARIAL_HARMFUL,
        label=Label.ERROR,
        text=text,
        error_type="pharmacotherapy",
        error_sentence_id=0,
        error_sentence="He is given ibuprofen.",
        corrected_sentence="He is given aspirin.",
        source_file="long.csv",
    )


def test_a_prompt_within_the_budget_is_the_rendered_prompt_whole(tokenizer):
    messages = assessor_messages("A 60-year-old man has chest pain. He is given ibuprofen.")
    fitted = fit_prompt(tokenizer, messages, 4096)
    assert fitted.ids == prompt_ids(tokenizer, messages) and fitted.cut_tokens == 0


@pytest.mark.parametrize("build", [assessor_messages, lambda note: attacker_messages(harmful_seed(note))])
def test_an_overlong_note_is_cut_from_its_end_and_the_instructions_stay(tokenizer, build):
    messages = build(LONG_NOTE)
    budget = 1280
    whole = prompt_ids(tokenizer, messages)
    assert len(whole) > budget

    fitted = fit_prompt(tokenizer, messages, budget)

    assert budget - 3 <= len(fitted.ids) <= budget
    assert fitted.note_tokens == len(tokenizer.encode(LONG_NOTE, add_special_tokens=False))
    assert 0 < fitted.cut_tokens < fitted.note_tokens
    text = tokenizer.decode(fitted.ids)
    # Everything before the note (template opening, system prompt, task) is the rendered prompt's own, ...
    rendered = render_prompt(tokenizer, messages)
    instructions = rendered[: rendered.index(NOTE_HEADING) + len(NOTE_HEADING)]
    assert text.startswith(instructions)
    # ... the note kept is the note's beginning, and what follows it (end of turn, thinking prefix) is whole.
    after_note = render_prompt(tokenizer, with_note(messages, ""))[len(instructions) :]
    assert text.endswith(after_note) and after_note.endswith(THINKING_PREFIX)
    kept = text[len(instructions) : len(text) - len(after_note)]
    assert len(kept) > 1000 and LONG_NOTE.startswith(kept)
    assert note_of(with_note(messages, kept)) == kept


def test_instructions_that_cannot_fit_are_refused_not_cut(tokenizer):
    messages = assessor_messages(LONG_NOTE)
    empty_note = len(prompt_ids(tokenizer, with_note(messages, "")))
    with pytest.raises(InstructionsTooLongError, match=f"{empty_note} tokens"):
        fit_prompt(tokenizer, messages, empty_note - 1)


def test_a_message_list_without_a_note_is_not_a_game_prompt():
    with pytest.raises(ValueError, match="no clinical note"):
        note_of([{"role": "user", "content": "hello"}])
