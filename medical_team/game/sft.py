"""Format warm-start (SFT) examples: the game's own prompts with gold targets in the game's format (docs/game.md).

A target is what the model writes after the thinking prefix: `<reasoning> </think> <answer> ... </answer>`.
Assessor targets come from the seed's gold labels; attacker targets from MEDEC's own pairs (`inject`:
the original error note; `adversarial_harmful` and `decoy`: the note as it is, so its truth is kept).
`medplay convert` writes them (`sft_train.parquet` from the train split, `sft_val.parquet` from val).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from medical_team.common.vocab import BenignAttackMode, Category, Label, Role
from medical_team.data.openrlhf import reference_answer
from medical_team.data.records import GameSeed
from medical_team.data.verl_parquet import Row
from medical_team.game.cot import ANSWER_CLOSE, ANSWER_OPEN, THINK_CLOSE
from medical_team.game.prompts import Message, assessor_messages, attacker_messages

SFT_DATA_SOURCE = "medec_sft"

_REVIEW = "I check the history, findings, diagnosis and management against each other."


@dataclass(frozen=True)
class SftExample:
    """One supervised turn: the game's prompt messages and the target continuation after the thinking prefix."""

    role: Role
    seed: GameSeed
    messages: list[Message]
    target: str
    label: Label  # truth of the note the assessor judges, or of the note the attacker writes


def cot_response(reasoning: str, answer: str) -> str:
    """A response in the chain-of-thought format of docs/game.md (what follows the prompt's open `<think> `)."""
    return f"{reasoning} {THINK_CLOSE} {ANSWER_OPEN} {answer} {ANSWER_CLOSE}"


def _quote(text: str | None) -> str:
    """A sentence on one line, in double quotes."""
    return '"' + " ".join((text or "").split()) + '"'


def assessor_target(seed: GameSeed) -> str:
    """The gold assessor response for the seed note: a short reasoning, then the reference answer.

    The reasoning names the erroneous sentence by its id and the error's type but quotes neither the sentence nor
    its correction: the answer states them once. Quoting them twice made ERROR targets about twice as long as
    NO_ERROR ones, and a response cap then cut ERROR answers more often and pushed RL towards NO_ERROR (docs/game.md).
    """
    if seed.label is Label.NO_ERROR:
        reasoning = f"{_REVIEW} Every statement fits the case, so the note contains no medical error."
    else:
        kind = f"a {seed.error_type} error" if seed.error_type else "an error"
        reasoning = f"{_REVIEW} Sentence {seed.error_sentence_id} does not fit the case: it holds {kind}."
    return cot_response(reasoning, reference_answer(seed))


def attacker_target(
    seed: GameSeed, benign_mode: BenignAttackMode, partner: GameSeed | None
) -> tuple[str, Label] | None:
    """The attacker's gold response and the truth of the note it writes; None when MEDEC has no pair for it.

    `partner` is the harmful seed of the same MEDEC note (needed for `inject`: its text is the error note).
    """
    if seed.category is Category.ADVERSARIAL_HARMFUL:
        reasoning = (
            f"The {seed.error_type or 'known'} error in sentence {seed.error_sentence_id} must stay. "
            "The rest of the case supports it, so I keep the note as written and add no other error."
        )
        return cot_response(reasoning, seed.text), Label.ERROR
    if seed.category is not Category.ADVERSARIAL_BENIGN:
        return None
    if benign_mode is BenignAttackMode.DECOY:
        reasoning = "The note is medically correct. I keep every statement as written so that it stays correct."
        return cot_response(reasoning, seed.text), Label.NO_ERROR
    if partner is None:
        return None
    reasoning = (
        f"I change sentence {partner.error_sentence_id} from {_quote(partner.corrected_sentence)} to "
        f"{_quote(partner.error_sentence)}: one {partner.error_type or 'medical'} error that fits the case. "
        "Everything else stays the same."
    )
    return cot_response(reasoning, partner.text), Label.ERROR


def sft_examples(seeds: Sequence[GameSeed], benign_mode: BenignAttackMode) -> list[SftExample]:
    """Per seed, in order: the assessor on the seed note, then (adversarial seeds with a target) the attacker."""
    harmful = {seed.pair_id: seed for seed in seeds if seed.label is Label.ERROR}
    examples: list[SftExample] = []
    for seed in seeds:
        messages = assessor_messages(seed.text)
        examples.append(SftExample(Role.ASSESSOR, seed, messages, assessor_target(seed), seed.label))
        attack = attacker_target(seed, benign_mode, harmful.get(seed.pair_id)) if seed.category.adversarial else None
        if attack is not None:
            target, label = attack
            examples.append(SftExample(Role.ATTACKER, seed, attacker_messages(seed, benign_mode), target, label))
    return examples


def sft_row(example: SftExample, *, index: int, split: str, benign_mode: BenignAttackMode) -> Row:
    """The parquet row of one example (`prompt` messages, `response` target, metadata)."""
    return {
        "data_source": SFT_DATA_SOURCE,
        "prompt": example.messages,
        "response": example.target,
        "extra_info": {
            "index": index,
            "split": split,
            "role": example.role.value,
            "category": example.seed.category.value,
            "note_id": example.seed.note_id,
            "pair_id": example.seed.pair_id,
            "label": example.label.value,
            "benign_mode": benign_mode.value,
        },
    }


def sft_rows(seeds: Sequence[GameSeed], split: str, benign_mode: BenignAttackMode) -> list[Row]:
    """The SFT rows of one split's seeds."""
    return [
        sft_row(example, index=index, split=split, benign_mode=benign_mode)
        for index, example in enumerate(sft_examples(seeds, benign_mode))
    ]
