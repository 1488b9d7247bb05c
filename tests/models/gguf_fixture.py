"""A tiny random Llama model written as a GGUF file the way llama.cpp writes one (built at test time, ~1 s)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
CHAT_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


@dataclass(frozen=True)
class TinyGGUF:
    """The GGUF file and the reference it was written from."""

    path: Path
    model: object  # the transformers LlamaForCausalLM whose weights the file holds (after Q8_0 rounding)
    tokenizer: object  # the `tokenizers.Tokenizer` whose vocabulary and merges the file holds


def train_tokenizer(texts: list[str], vocab_size: int = 384):
    """A byte-level BPE tokenizer that splits digits one by one, with SmolLM2's three special tokens first."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIALS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return tokenizer


def llama_cpp_permute(weights: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's q/k row order for rotary embeddings (convert_hf_to_gguf's `permute`)."""
    return (
        weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


def write_tiny_gguf(path: Path, texts: list[str], *, tokenizer_model: str = "gpt2") -> TinyGGUF:
    """Write a 2-layer Llama (hidden 64, GQA 4/2 heads) and its tokenizer to `path`; eos metadata as in SmolLM2's."""
    import gguf
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = train_tokenizer(texts)
    vocab = tokenizer.get_vocab()
    tokens = sorted(vocab, key=vocab.__getitem__)
    merges = [" ".join(pair) for pair in json.loads(tokenizer.to_str())["model"]["merges"]]
    config = LlamaConfig(
        vocab_size=len(tokens),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    embed = model.model.embed_tokens.weight
    # The embedding is stored as Q8_0 (as llama.cpp stores SmolLM2's): the reference carries the same rounding.
    q8 = gguf.quants.quantize(embed.detach().numpy(), gguf.GGMLQuantizationType.Q8_0)
    with torch.no_grad():
        embed.copy_(torch.from_numpy(gguf.quants.dequantize(q8, gguf.GGMLQuantizationType.Q8_0)))

    writer = gguf.GGUFWriter(path, "llama")
    writer.add_name("tiny-llama")
    writer.add_license("apache-2.0")
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_rope_dimension_count(config.hidden_size // config.num_attention_heads)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_rope_freq_base(10000.0)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model(tokenizer_model)
    writer.add_tokenizer_pre("smollm")
    writer.add_token_list(tokens)
    writer.add_token_types([3 if t in SPECIALS else 1 for t in tokens])
    writer.add_token_merges(merges)
    writer.add_bos_token_id(vocab["<|im_start|>"])
    writer.add_eos_token_id(vocab["<|im_end|>"])
    writer.add_unk_token_id(vocab["<|endoftext|>"])
    writer.add_pad_token_id(vocab["<|im_end|>"])
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)
    writer.add_tensor("token_embd.weight", q8, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("output_norm.weight", model.model.norm.weight.detach().numpy())
    names = {
        "input_layernorm": "attn_norm",
        "self_attn.q_proj": "attn_q",
        "self_attn.k_proj": "attn_k",
        "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output",
        "post_attention_layernorm": "ffn_norm",
        "mlp.gate_proj": "ffn_gate",
        "mlp.up_proj": "ffn_up",
        "mlp.down_proj": "ffn_down",
    }
    for index, layer in enumerate(model.model.layers):
        for hf_name, gguf_name in names.items():
            weight = layer.get_submodule(hf_name).weight.detach().numpy()
            if gguf_name == "attn_q":
                weight = llama_cpp_permute(weight, config.num_attention_heads)
            elif gguf_name == "attn_k":
                weight = llama_cpp_permute(weight, config.num_key_value_heads)
            writer.add_tensor(f"blk.{index}.{gguf_name}.weight", np.ascontiguousarray(weight))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return TinyGGUF(path, model, tokenizer)
