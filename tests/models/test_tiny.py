"""The tiny Qwen3 model: deterministic, loadable, ChatML-formatted, able to generate."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from medical_team.models.tiny import IM_END, MARKUP_TOKENS, build_tiny_model


def test_same_spec_gives_identical_files(tmp_path: Path) -> None:
    first, second = build_tiny_model(tmp_path / "a"), build_tiny_model(tmp_path / "b")
    names = sorted(p.name for p in first.iterdir())
    assert "model.safetensors" in names and "tokenizer.json" in names
    assert names == sorted(p.name for p in second.iterdir())
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_model_loads_renders_chatml_and_generates(tmp_path: Path) -> None:
    path = build_tiny_model(tmp_path / "tiny")
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    config = model.config
    assert (config.model_type, config.hidden_size, config.num_hidden_layers, config.head_dim) == ("qwen3", 64, 2, 32)
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "BP 120/80."}], tokenize=False, add_generation_prompt=True
    )
    assert text == "<|im_start|>user\nBP 120/80.<|im_end|>\n<|im_start|>assistant\n"
    assert tokenizer.eos_token == IM_END and tokenizer.pad_token_id != tokenizer.eos_token_id
    for tag in MARKUP_TOKENS:
        assert len(tokenizer.encode(tag, add_special_tokens=False)) == 1, tag
    ids = tokenizer(text, return_tensors="pt").input_ids
    torch.manual_seed(0)
    out = model.generate(ids, max_new_tokens=5, do_sample=True)
    assert out.shape[1] == ids.shape[1] + 5 or IM_END in tokenizer.decode(out[0])
