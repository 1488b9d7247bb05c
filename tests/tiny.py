"""Tiny random causal LMs for tests, built offline in about a second: Qwen2/Qwen3 + byte-level BPE + ChatML.

verl installs a top-level `tests` package, so import this file by module name with `tests/` on sys.path:

    from tiny import build_tiny_model
    path = build_tiny_model(tmp_path / "tiny")  # a directory `from_pretrained` loads
"""

from __future__ import annotations

import csv
import importlib.resources
import itertools
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# Game tags get their own tokens so even a random model can emit them whole.
TAG_TOKENS = ("<think>", "</think>", "<answer>", "</answer>")

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

_CORPUS_CSV = "MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv"
_EXTRA_CORPUS = (
    "Let's think step by step. verdict: ERROR verdict: NO_ERROR sentence: error_type: correction: ",
    "diagnosis management treatment pharmacotherapy causalOrganism Attacker Assessor clinical note",
)


def _corpus(notes: int) -> list[str]:
    """Training text for the tokenizer: the first MEDEC validation notes plus the game's own vocabulary."""
    resources = importlib.resources.files("medical_team.data.resources")
    with (resources / _CORPUS_CSV).open(encoding="utf-8", newline="") as handle:
        texts = [row["Text"] for row in itertools.islice(csv.DictReader(handle), notes)]
    return texts + list(_EXTRA_CORPUS)


def build_tokenizer(vocab_size: int = 1024, notes: int = 60) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on MEDEC text, with ChatML special tokens and template."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_corpus(notes), trainer)
    tokenizer.add_tokens(list(TAG_TOKENS))
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=CHATML_TEMPLATE,
    )


def build_tiny_model(directory: Path, arch: str = "qwen2", seed: int = 0) -> Path:
    """Save a random tiny `arch` ("qwen2" or "qwen3") model and its tokenizer into `directory`."""
    import torch

    tokenizer = build_tokenizer()
    config_cls, model_cls = {"qwen2": (Qwen2Config, Qwen2ForCausalLM), "qwen3": (Qwen3Config, Qwen3ForCausalLM)}[arch]
    config = config_cls(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=32,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = model_cls(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
