"""Before a run starts: every prompt its data can give the policy fits the prompt length, in the policy's own tokens.

`medplay train` calls `check_prompt_lengths` once the model folder is ready, before the judge's server and Ray.
Each split's prompts are rendered as the agent loop renders them (`game.prompt_fit.prompt_ids`: the game's
prompt builders, the policy's chat template, `data.apply_chat_template_kwargs`): in train.parquet the
attacker's prompt over each seed the run plays adversarially and the assessor's over each seed note, in
val.parquet the assessor's (validation plays every row as a vanilla game). The assessor also reads rewrites
of up to `data.max_response_length` tokens, so its instructions plus that many tokens must fit too. A prompt
that does not fit stops the run (UserInputError: exit 2) naming the file, the row, the note and both numbers;
the agent loop would otherwise cut that note every time it is played.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from medical_team.common.errors import UserInputError
from medical_team.common.vocab import BenignAttackMode, Role
from medical_team.data.records import GameSeed
from medical_team.data.verl_parquet import read_verl_parquet
from medical_team.game.prompt_fit import prompt_ids
from medical_team.game.prompts import Message, assessor_messages, attacker_messages
from medical_team.models.light_tokenizer import light_tokenizer
from medical_team.run.rows import seed_of_row
from medical_team.run.settings import SelfPlaySettings

PROMPT_LENGTH_KEY = "data.max_prompt_length"
RESPONSE_LENGTH_KEY = "data.max_response_length"


@dataclass(frozen=True)
class SplitRow:
    """One row of a split file: its 1-based row number, the seed it carries and the attack mode for clean seeds."""

    number: int
    seed: GameSeed
    benign_mode: BenignAttackMode


@dataclass(frozen=True)
class LongestPrompt:
    """The longest prompt of a split file: its tokens, and where it comes from."""

    tokens: int
    file: Path
    row: int
    note_id: str
    role: Role


def split_rows(path: Path) -> list[SplitRow]:
    """Every row of a verl parquet file written by `medplay convert` (game or benchmark rows), with its seed."""
    rows = []
    for number, row in enumerate(read_verl_parquet(path), start=1):
        try:
            seed, mode = seed_of_row(row.get("data_source"), row.get("extra_info"))
        except (TypeError, ValueError, KeyError) as error:
            raise UserInputError(str(error), file=str(path), row=number, field="extra_info") from None
        rows.append(SplitRow(number, seed, mode))
    return rows


def policy_tokenizer(config: DictConfig) -> Any:
    """The policy's tokenizer (`actor_rollout_ref.model.path`), as verl's workers load it: read without transformers
    (and torch) where that counts the same tokens (models/light_tokenizer.py), else transformers' AutoTokenizer."""
    model = config.actor_rollout_ref.model
    trust_remote_code = bool(model.get("trust_remote_code", False))
    light = light_tokenizer(model.path, trust_remote_code, template_kwargs(config))
    if light is not None:
        return light
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model.path, trust_remote_code=trust_remote_code)


def template_kwargs(config: DictConfig) -> dict[str, Any]:
    """`data.apply_chat_template_kwargs`, which the agent loop hands the chat template."""
    kwargs = OmegaConf.select(config, "data.apply_chat_template_kwargs", default=None)
    return dict(OmegaConf.to_container(kwargs, resolve=True)) if kwargs else {}


def game_prompts(row: SplitRow, settings: SelfPlaySettings, training: bool) -> Iterator[tuple[Role, list[Message]]]:
    """The prompts a row gives the policy: in training the attacker's (when played adversarially), and the assessor's."""
    if training:
        played = settings.played_category(row.seed.category)
        if played.adversarial:
            yield Role.ATTACKER, attacker_messages(replace(row.seed, category=played), row.benign_mode)
    yield Role.ASSESSOR, assessor_messages(row.seed.text)


def longest_prompt(
    tokenizer: Any, path: Path, settings: SelfPlaySettings, training: bool, kwargs: Mapping[str, Any]
) -> LongestPrompt | None:
    """The longest prompt of a split file in the tokenizer's tokens (None: the file has no rows)."""
    longest = None
    for row in split_rows(path):
        for role, messages in game_prompts(row, settings, training):
            tokens = len(prompt_ids(tokenizer, messages, kwargs))
            if longest is None or tokens > longest.tokens:
                longest = LongestPrompt(tokens, path, row.number, row.seed.note_id, role)
    return longest


def check_prompt_lengths(config: DictConfig, settings: SelfPlaySettings, tokenizer: Any | None = None) -> None:
    """Refuse a run whose data or rewrites cannot fit `data.max_prompt_length` (UserInputError, exit 2).

    The budget is the agent loop's, `actor_rollout_ref.rollout.prompt_length` (`data.max_prompt_length` unless
    overridden); `tokenizer` defaults to the policy's.
    """
    tokenizer = tokenizer if tokenizer is not None else policy_tokenizer(config)
    budget = int(config.actor_rollout_ref.rollout.prompt_length)
    kwargs = template_kwargs(config)
    for key, training in (("train_files", True), ("val_files", False)):
        longest = longest_prompt(tokenizer, Path(config.data[key]), settings, training, kwargs)
        if longest is not None and longest.tokens > budget:
            raise UserInputError(
                f"the {longest.role.value}'s prompt over note {longest.note_id} takes {longest.tokens} tokens, over "
                f"{PROMPT_LENGTH_KEY}={budget}: the agent loop would cut the note every time it is played; raise "
                f"{PROMPT_LENGTH_KEY} to at least {longest.tokens} or leave the note out of the input",
                file=str(longest.file),
                row=longest.row,
                field=f"data.{key}",
            )
    rewrite = int(config.actor_rollout_ref.rollout.response_length)
    instructions = len(prompt_ids(tokenizer, assessor_messages(""), kwargs))
    if instructions + rewrite > budget:
        raise UserInputError(
            f"the assessor's prompt over a rewrite of {RESPONSE_LENGTH_KEY}={rewrite} tokens takes up to "
            f"{instructions} + {rewrite} = {instructions + rewrite} tokens, over {PROMPT_LENGTH_KEY}={budget}; "
            f"raise {PROMPT_LENGTH_KEY} to at least {instructions + rewrite} or lower {RESPONSE_LENGTH_KEY}",
            field=PROMPT_LENGTH_KEY,
        )
