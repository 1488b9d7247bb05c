"""Chat prompts for the attacker and the assessor, in the chain-of-thought format of docs/game.md.

The messages carry no thinking prefix: `with_thinking_prefix` is applied to the text that the
chat template renders, so the model starts inside an open `<think>` block.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from medical_team.common.vocab import ERROR_TYPES, BenignAttackMode, Category, Role
from medical_team.data.records import GameSeed

THINKING_PREFIX = "Let's think step by step.\n<think> "
# What a native thinking mode (Qwen3 `enable_thinking`) opens the response with, when its template does not.
NATIVE_THINK_OPEN = "<think>\n"

Message = dict[str, str]

# Between a user message's task and its clinical note: everything after it is the note (`note_of`, `with_note`).
NOTE_HEADING = "\n\nClinical note:\n"

_FORMAT_RULES = (
    "Think first, then answer. Your reply must have exactly this shape:\n"
    "<your reasoning> </think> <answer> <your final answer> </answer>\n"
    "Close the thinking block once with </think>, give exactly one <answer>...</answer> block, "
    "and write nothing after </answer>."
)

_ERROR_TYPES_TEXT = ", ".join(ERROR_TYPES)

_ATTACKER_SYSTEM = (
    "You are the Attacker in a medical error-detection game. You rewrite clinical notes so that "
    "another model, the Assessor, finds it hard to tell correctly whether the note contains a "
    f"medical error. Medical error types: {_ERROR_TYPES_TEXT}. Keep the same patient and case. "
    + _FORMAT_RULES
    + " Inside <answer> put only the full rewritten note."
)

_ASSESSOR_SYSTEM = (
    "You are the Assessor: a careful physician who reviews clinical notes for medical errors "
    f"(types: {_ERROR_TYPES_TEXT}). A note contains at most one error. "
    + _FORMAT_RULES
    + " Inside <answer> write one field per line:\n"
    "verdict: ERROR or verdict: NO_ERROR\n"
    "and, when the verdict is ERROR, also:\n"
    "sentence: <the erroneous sentence, quoted exactly>\n"
    f"error_type: <one of {_ERROR_TYPES_TEXT}>\n"
    "correction: <the corrected sentence>"
)

_HARMFUL_TASK = (
    "This note contains exactly one medical error ({error_type}).\n"
    'The erroneous sentence is: "{error_sentence}"\n'
    'The correct statement would be: "{corrected_sentence}"\n'
    "Rewrite the note so that the SAME error stays in it but is harder to detect: subtler wording, "
    "plausible supporting context. Do not fix the error and do not add any other error."
)

_INJECT_TASK = (
    "This note is medically correct. Rewrite it so that it contains exactly ONE clinically "
    "significant medical error that is hard to detect (one of: {error_types}). Everything else "
    "must stay correct and consistent with the same patient and case."
)

_DECOY_TASK = (
    "This note is medically correct. Rewrite it so that it looks suspicious to a reviewer "
    "(unusual but valid findings, hedged wording, surprising yet correct management) while "
    "staying completely medically correct. Do not introduce any error."
)


def attacker_messages(seed: GameSeed, benign_mode: BenignAttackMode = BenignAttackMode.INJECT) -> list[Message]:
    """The attacker's first-turn chat messages for an adversarial seed."""
    if seed.category is Category.ADVERSARIAL_HARMFUL:
        task = _HARMFUL_TASK.format(
            error_type=seed.error_type or "unknown type",
            error_sentence=seed.error_sentence or "",
            corrected_sentence=seed.corrected_sentence or "",
        )
    elif seed.category is Category.ADVERSARIAL_BENIGN:
        task = (
            _INJECT_TASK.format(error_types=_ERROR_TYPES_TEXT)
            if benign_mode is BenignAttackMode.INJECT
            else _DECOY_TASK
        )
    else:
        raise ValueError(f"seed {seed.note_id} is {seed.category.value}: vanilla games have no attacker turn")
    return [
        {"role": "system", "content": _ATTACKER_SYSTEM},
        {"role": "user", "content": f"{task}{NOTE_HEADING}{seed.text}"},
    ]


def assessor_messages(note: str) -> list[Message]:
    """The assessor's chat messages for the note it must judge."""
    return [
        {"role": "system", "content": _ASSESSOR_SYSTEM},
        {"role": "user", "content": f"Does this clinical note contain a medical error?{NOTE_HEADING}{note}"},
    ]


def _task_and_note(messages: list[Message]) -> tuple[str, str]:
    """The user message of a game prompt built by this module, split at NOTE_HEADING."""
    task, heading, note = messages[-1]["content"].partition(NOTE_HEADING)
    if not heading:
        raise ValueError("not a game prompt: its last message holds no clinical note")
    return task, note


def note_of(messages: list[Message]) -> str:
    """The clinical note of a game prompt built by this module: the end of its user message."""
    return _task_and_note(messages)[1]


def with_note(messages: list[Message], note: str) -> list[Message]:
    """The same game prompt with `note` in place of its clinical note; the instructions unchanged."""
    task, _ = _task_and_note(messages)
    return [*messages[:-1], {**messages[-1], "content": f"{task}{NOTE_HEADING}{note}"}]


def prompt_role(messages: list[Message]) -> Role:
    """The role a chat prompt built by this module addresses (told apart by its system message)."""
    system = messages[0]["content"] if messages and messages[0].get("role") == "system" else None
    if system == _ATTACKER_SYSTEM:
        return Role.ATTACKER
    if system == _ASSESSOR_SYSTEM:
        return Role.ASSESSOR
    raise ValueError("not a game prompt: its system message is neither the attacker's nor the assessor's")


def first_turn_messages(seed: GameSeed, benign_mode: BenignAttackMode = BenignAttackMode.INJECT) -> list[Message]:
    """The messages of a game's first turn: the attacker's in adversarial games, the assessor's in vanilla ones."""
    return attacker_messages(seed, benign_mode) if seed.category.adversarial else assessor_messages(seed.text)


def with_thinking_prefix(rendered_prompt: str) -> str:
    """Append the thinking prefix to a prompt already rendered by the chat template."""
    return rendered_prompt + THINKING_PREFIX


def render_prompt(
    tokenizer: Any,
    messages: list[Message],
    native_thinking: bool = False,
    template_kwargs: Mapping[str, Any] | None = None,
) -> str:
    """The exact text a model continues: the chat template, then the thinking prefix.

    With `native_thinking` the template's own thinking mode is used (Qwen3 `enable_thinking`) and the
    prompt ends with the model's `<think>` opener instead of the game's prefix. `template_kwargs` go to
    the chat template (verl's `data.apply_chat_template_kwargs` in training).
    """
    kwargs = dict(template_kwargs or {})
    if native_thinking:
        rendered = tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True, **{**kwargs, "enable_thinking": True}
        )
        return rendered if rendered.rstrip().endswith("<think>") else rendered + NATIVE_THINK_OPEN
    return with_thinking_prefix(
        tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **kwargs)
    )
