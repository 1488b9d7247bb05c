"""Before a run starts: the served judge's context holds the longest request the run can send it.

A judge request (`judge.prompt.judge_messages`) carries the seed note, what is known of its error, and the
rewrite; the judge then writes up to `medplay.judge.serve.max_tokens`. vLLM refuses a request longer than its
`--max-model-len` (`medplay.judge.serve.max_model_len`), and the game becomes a tie, so `medplay train` checks
before the judge's server starts: the longest judge prompt over the adversarial seeds of train.parquet with an
empty rewrite, in the judge's own tokens and chat template (as vLLM's chat endpoint renders it), plus a rewrite
of `data.max_response_length` tokens (the attacker's whole response at most; counted as as many judge tokens),
plus `serve.max_tokens`. Refused: a UserInputError (exit 2) naming the numbers and the note. A model folder
whose tokenizer does not load is left unchecked: the judge's server then fails its start with its own cause and
exit status (tests/e2e/test_judge_failures_cpu.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from medical_team.common.errors import UserInputError
from medical_team.game.judging import JudgeRequest
from medical_team.game.settle import intended_label
from medical_team.judge.prompt import judge_messages
from medical_team.launcher.plan.prompt_lengths import RESPONSE_LENGTH_KEY, split_rows
from medical_team.models.light_tokenizer import light_tokenizer
from medical_team.run.settings import SelfPlaySettings

log = logging.getLogger(__name__)

MAX_MODEL_LEN_KEY = "medplay.judge.serve.max_model_len"


@dataclass(frozen=True)
class JudgeRequestSize:
    """The longest judge request of a run in the judge's tokens: its parts, and the note it is over."""

    prompt_tokens: int  # instructions, seed note and what is known of its error, with an empty rewrite
    rewrite_tokens: int
    answer_tokens: int
    note_id: str
    row: int

    @property
    def total(self) -> int:
        """Tokens of the whole request: prompt, rewrite and the judge's answer."""
        return self.prompt_tokens + self.rewrite_tokens + self.answer_tokens


def judge_prompt_tokens(tokenizer: Any, request: JudgeRequest) -> int:
    """Tokens of the judge's prompt for `request`, rendered with the judge's chat template as vLLM's chat endpoint does."""
    text = tokenizer.apply_chat_template(judge_messages(request), tokenize=False, add_generation_prompt=True)
    return len(tokenizer.encode(text, add_special_tokens=False))


def judge_tokenizer(model: str) -> Any | None:
    """The judge model's tokenizer: read without transformers (and torch) where that counts the same tokens
    (models/light_tokenizer.py), else transformers' AutoTokenizer; None when it does not load."""
    light = light_tokenizer(model)
    if light is not None:
        return light
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(model)
    except (OSError, ValueError) as error:
        # A model folder the judge's server cannot load either: its start says why, with its own exit status.
        log.warning("the judge's context is not checked: its tokenizer does not load (%s)", error)
        return None


def longest_judge_request(
    tokenizer: Any, train_file: Path, settings: SelfPlaySettings, rewrite_tokens: int, answer_tokens: int
) -> JudgeRequestSize | None:
    """The longest request the games of `train_file` can send the judge (None: no row is played adversarially)."""
    longest = None
    for row in split_rows(train_file):
        played = settings.played_category(row.seed.category)
        if not played.adversarial:
            continue
        request = JudgeRequest(replace(row.seed, category=played), intended_label(played, row.benign_mode), "")
        tokens = judge_prompt_tokens(tokenizer, request)
        if longest is None or tokens > longest.prompt_tokens:
            longest = JudgeRequestSize(tokens, rewrite_tokens, answer_tokens, row.seed.note_id, row.number)
    return longest


def check_judge_context(config: DictConfig, settings: SelfPlaySettings, tokenizer: Any | None = None) -> None:
    """Refuse a run whose served judge (`vllm`) cannot hold its longest request (UserInputError, exit 2).

    `tokenizer` defaults to the judge model's (`medplay.judge.model`, a local folder once the run is planned).
    """
    judge = settings.judge
    if not judge.kind.served_here or judge.serve.max_model_len is None:
        return  # another judge's context is its own; vLLM's default is the model's whole context
    tokenizer = tokenizer if tokenizer is not None else judge_tokenizer(judge.model)
    if tokenizer is None:
        return
    train_file = Path(config.data.train_files)
    rewrite = int(config.actor_rollout_ref.rollout.response_length)
    size = longest_judge_request(tokenizer, train_file, settings, rewrite, judge.serve.max_tokens)
    if size is not None and size.total > judge.serve.max_model_len:
        raise UserInputError(
            f"the longest judge request, over note {size.note_id}, takes up to {size.prompt_tokens} tokens of "
            f"instructions and notes + {size.rewrite_tokens} of rewrite ({RESPONSE_LENGTH_KEY}) + "
            f"{size.answer_tokens} of verdict (medplay.judge.serve.max_tokens) = {size.total} tokens, over "
            f"{MAX_MODEL_LEN_KEY}={judge.serve.max_model_len}: the judge's server would refuse it and the game "
            f"would be a tie; raise {MAX_MODEL_LEN_KEY} to at least {size.total} or lower {RESPONSE_LENGTH_KEY}",
            file=str(train_file),
            row=size.row,
            field=MAX_MODEL_LEN_KEY,
        )
