"""A game prompt in tokens, fitted to a token budget by shortening its clinical note, never its instructions.

verl sizes every sequence as prompt plus response, so training must cut a prompt longer than
`rollout.prompt_length`. verl's own cut drops the prompt's first tokens: the chat template's opening, the
system prompt and the task. Here the note (the end of the user message, `prompts.note_of`) loses its end
instead, and the system prompt, the task and the chat template's role markers stay whole:

    fitted = fit_prompt(tokenizer, messages, max_tokens=2048)
    fitted.ids, fitted.cut_tokens
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from medical_team.game.prompts import Message, note_of, render_prompt, with_note


class InstructionsTooLongError(ValueError):
    """A prompt over its budget even with an empty note: only cutting its instructions would make it fit."""


@dataclass(frozen=True)
class FittedPrompt:
    """A prompt's token ids within the budget, and what was cut from its note."""

    ids: list[int]
    cut_tokens: int = 0  # tokens cut from the note's end (0: the prompt fitted whole)
    note_tokens: int = 0  # the note's tokens before the cut (counted only when it was cut)


def prompt_ids(tokenizer: Any, messages: list[Message], template_kwargs: Mapping[str, Any] | None = None) -> list[int]:
    """The token ids of the prompt a model continues (`render_prompt`: chat template and thinking prefix)."""
    rendered = render_prompt(tokenizer, messages, template_kwargs=template_kwargs)
    return tokenizer.encode(rendered, add_special_tokens=False)


def fit_prompt(
    tokenizer: Any, messages: list[Message], max_tokens: int, template_kwargs: Mapping[str, Any] | None = None
) -> FittedPrompt:
    """The prompt's ids, its note shortened from the end until the whole prompt has at most `max_tokens`.

    Raises InstructionsTooLongError when even an empty note leaves the prompt over `max_tokens`.
    """
    ids = prompt_ids(tokenizer, messages, template_kwargs)
    if len(ids) <= max_tokens:
        return FittedPrompt(ids)
    note_ids = tokenizer.encode(note_of(messages), add_special_tokens=False)
    kept = len(note_ids)
    while len(ids) > max_tokens:
        if kept == 0:
            raise InstructionsTooLongError(
                f"the prompt's instructions alone take {len(ids)} tokens, over the budget of {max_tokens}"
            )
        # Tokens merge differently across the cut, so one pass may leave a token or two over: cut again.
        kept = max(0, kept - (len(ids) - max_tokens))
        shortened = with_note(messages, tokenizer.decode(note_ids[:kept]))
        ids = prompt_ids(tokenizer, shortened, template_kwargs)
    return FittedPrompt(ids, len(note_ids) - kept, len(note_ids))
