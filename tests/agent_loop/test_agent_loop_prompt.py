"""The agent loop's prompt: an over-long note is cut inside the user message, and verl's prompt budget is the one it fits.

.venv/bin/python -m pytest -q tests/agent_loop/test_agent_loop_prompt.py
"""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
from transformers import AutoTokenizer
from verl.experimental.agent_loop.agent_loop import AgentLoopBase

from medical_team.agent_loop.agent_loop import _TurnPlayer
from medical_team.common.vocab import Role
from medical_team.game.prompt_fit import fit_prompt, prompt_ids
from medical_team.game.prompts import assessor_messages

LONG_NOTE = "The patient reports intermittent chest pain radiating to the left arm on exertion. " * 200
PROMPT_LENGTH = 1024


@pytest.fixture(scope="module")
def turn_player(tiny_model_dir):
    """The attributes of verl's agent loop that `_TurnPlayer._prompt_ids` reads, with the tiny model's tokenizer."""
    return SimpleNamespace(
        tokenizer=AutoTokenizer.from_pretrained(tiny_model_dir),
        rollout_config=SimpleNamespace(prompt_length=PROMPT_LENGTH),
        apply_chat_template_kwargs={},
    )


def test_an_overlong_prompt_keeps_its_instructions_and_the_cut_is_logged(turn_player, caplog):
    messages = assessor_messages(LONG_NOTE)
    with caplog.at_level(logging.WARNING, logger="medical_team.agent_loop.agent_loop"):
        ids = _TurnPlayer._prompt_ids(turn_player, Role.ASSESSOR, messages)
    assert ids == fit_prompt(turn_player.tokenizer, messages, PROMPT_LENGTH).ids and len(ids) <= PROMPT_LENGTH
    assert ids[:50] == prompt_ids(turn_player.tokenizer, messages)[:50]  # verl's cut would have dropped these
    (line,) = [record.getMessage() for record in caplog.records]
    assert line.startswith(f"medplay: the assessor's prompt was over rollout.prompt_length={PROMPT_LENGTH} tokens")
    assert "the instructions kept" in line


def test_a_prompt_that_fits_is_sent_whole_without_a_line(turn_player, caplog):
    messages = assessor_messages("A 60-year-old man has chest pain. He is given ibuprofen.")
    with caplog.at_level(logging.WARNING, logger="medical_team.agent_loop.agent_loop"):
        ids = _TurnPlayer._prompt_ids(turn_player, Role.ASSESSOR, messages)
    assert ids == prompt_ids(turn_player.tokenizer, messages) and not caplog.records


def test_verls_prompt_budget_is_rollout_prompt_length(turn_player):
    # verl cuts (from the left) what exceeds `rollout_config.prompt_length`: the budget medplay fits the note to,
    # so a fitted prompt reaches verl's padding whole.
    fitted = _TurnPlayer._prompt_ids(turn_player, Role.ASSESSOR, assessor_messages(LONG_NOTE))
    assert AgentLoopBase._cap_text_prompt_length(turn_player, fitted) == fitted
    over = list(range(PROMPT_LENGTH + 5))
    assert AgentLoopBase._cap_text_prompt_length(turn_player, over) == over[5:]
