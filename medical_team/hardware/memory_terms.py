"""The memory plan's terms: measured and predicted constants, and what one micro-batch or the actor's state takes.

Pure arithmetic over `PlanInputs` (plan_inputs.py); memory_plan.py adds these terms up per phase. docs/tuning.md
explains every term and its measured source.
"""

from __future__ import annotations

from medical_team.hardware.plan_inputs import PlanInputs
from medical_team.models.shape import GIB, ModelShape

MIB = 1024**2

# ---- Measured on one H100 80GB (the shared GPU run of 2026-11-24: run 2 and logits-mem/). ----
# CUDA context + NCCL of the trainer process: device memory used minus reserved after the actor's FSDP init.
TRAINER_CONTEXT_GIB = 1.2
# The rollout's vLLM asleep (between generations): its context and what sleep mode keeps.
VLLM_ASLEEP_GIB = 1.1
# The caching allocator holds this much above the trainer's peak allocation (76.77 / 75.07 GiB reserved/allocated).
ALLOCATOR_SLACK = 0.023
# fp32 vocabulary rows alive per token at the peak of a forward-only log-prob + entropy with full logits:
# 32.49 GiB for 16,384 tokens x 151,936 (bf16 logits, the fp32 log-softmax, its exp and their product).
FORWARD_FULL_COPIES = 3.5
# The same over chunks of logits: 3.56 GiB for 16,384 tokens in chunks of 2,048 (three fp32 rows per chunk token).
CHUNK_COPIES = 3.0
# A training micro-batch with full logits: 15.47 GiB for 8,192 tokens with gradient checkpointing, less the
# checkpoints and the layer working set below: 2.77 fp32 rows a token (logits, log-softmax and their gradients).
TRAIN_FULL_COPIES = 2.77

# ---- Predicted (verl's code, not yet measured on a GPU). ----
# verl's FusedLinearForPPO (use_fused_kernels, torch backend) computes logits 512 tokens at a time.
FUSED_CHUNK_TOKENS = 512
# fp32 rows per chunk token: forward (logits, fp32 copy, softmax, product, log-softmax); backward adds the
# one-hot target and the logits' gradient.
FUSED_FORWARD_COPIES = 4.5
FUSED_BACKWARD_COPIES = 6.0
# Without flash-attn (use_remove_padding=false) a micro-batch is padded to its longest sequence: the run-2
# lengths (mean prompt 686 + 1,024 response tokens, longest prompt 1,295) put ~15 % of padding on the budget.
PADDING_FACTOR = 1.15
# A vLLM engine's own activations, CUDA graphs and context inside its share, beside weights and KV cache.
VLLM_OVERHEAD_GIB = 1.5
# Bytes a token keeps alive in one decoder layer while it is recomputed and back-propagated (attention and MLP
# inputs and outputs, bf16, forward and backward): (4 x hidden + 3 x intermediate) x 2 B x 2.
LAYER_WORKING_FACTORS = (4, 3)
# Without gradient checkpointing every layer keeps its activations: (6 x hidden + 4 x intermediate) x 2 B a token.
LAYER_SAVED_FACTORS = (6, 4)

DTYPE_BYTES = {"fp32": 4, "float32": 4, "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2}


def _gib(count: float, bytes_each: float) -> float:
    """GiB of `count` values of `bytes_each` bytes."""
    return count * bytes_each / GIB


def logits_gib(inputs: PlanInputs, tokens: int, *, backward: bool) -> float:
    """Logits, log-softmax and entropy copies of one micro-batch of `tokens` over the vocabulary."""
    row = 4 * inputs.policy.vocab  # one fp32 vocabulary row
    if inputs.use_fused_kernels:
        copies = FUSED_BACKWARD_COPIES if backward else FUSED_FORWARD_COPIES
        head = 2 * _gib(inputs.policy.vocab * inputs.policy.hidden, 2) if backward else 0.0  # the head's gradient
        return _gib(min(tokens, FUSED_CHUNK_TOKENS) * copies, row) + head
    if backward:
        return _gib(tokens * TRAIN_FULL_COPIES, row)
    if inputs.entropy_chunking and inputs.use_remove_padding:
        # verl chunks the entropy only on the padding-free path; the bf16 logits stay whole.
        return _gib(tokens * 0.5 + min(tokens, inputs.entropy_chunk_tokens) * CHUNK_COPIES, row)
    return _gib(tokens * FORWARD_FULL_COPIES, row)


def micro_batch_tokens(inputs: PlanInputs, budget: int) -> int:
    """Tokens a micro-batch computes: at least one whole sequence, padded to its longest without flash-attn."""
    tokens = max(budget, inputs.max_sequence)
    return round(tokens * (1.0 if inputs.use_remove_padding else PADDING_FACTOR))


def forward_activations_gib(inputs: PlanInputs, tokens: int) -> float:
    """A forward-only pass: hidden states plus the larger of one layer's MLP and the logits."""
    shape = inputs.policy
    hidden = _gib(2 * tokens * shape.hidden, 2)
    layer = _gib(3 * tokens * shape.intermediate, 2)
    return hidden + max(layer, logits_gib(inputs, tokens, backward=False))


def training_activations_gib(inputs: PlanInputs, tokens: int) -> tuple[float, float]:
    """(activations, logits) of a training micro-batch: checkpoints + one layer's working set, and the logits."""
    shape = inputs.policy
    if inputs.gradient_checkpointing:
        saved = _gib(shape.layers * tokens * shape.hidden, 2)
    else:
        h_factor, i_factor = LAYER_SAVED_FACTORS
        saved = _gib(shape.layers * tokens * (h_factor * shape.hidden + i_factor * shape.intermediate), 2)
    h_factor, i_factor = LAYER_WORKING_FACTORS
    working = _gib(tokens * (h_factor * shape.hidden + i_factor * shape.intermediate), 4)
    return saved + working, logits_gib(inputs, tokens, backward=True)


def training_state_gib(inputs: PlanInputs) -> dict[str, float]:
    """Parameters, gradients and AdamW moments of the actor (LoRA: frozen base + fp32 adapters)."""
    shape = inputs.policy
    weight_bytes = DTYPE_BYTES.get(inputs.model_dtype, 4)
    if inputs.lora_rank > 0:
        adapters = shape.lora_params(inputs.lora_rank, inputs.target_modules)
        return {
            "parameters": _gib(shape.params, weight_bytes) + _gib(adapters, 4),
            "gradients": _gib(adapters, 4),
            "optimizer": _gib(adapters, 8),
        }
    return {
        "parameters": _gib(shape.params, weight_bytes),
        "gradients": _gib(shape.params, weight_bytes),
        "optimizer": _gib(shape.params, 2 * weight_bytes),
    }


def fsdp_working_gib(shape: ModelShape) -> float:
    """bf16 copies FSDP gathers while computing: the embedding/head unit and two decoder layers."""
    per_layer = (shape.params - shape.embedding_params - shape.extra_params) / shape.layers
    return _gib(shape.embedding_params + 2 * per_layer, 2)
