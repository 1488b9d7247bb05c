"""The disk one checkpoint takes, from the policy's shape, its dtypes and `checkpoint.save_contents`.

Pure arithmetic over the memory plan's inputs (plan_inputs.py: the policy's shape, LoRA, `model_dtype`), the same
parameter counts the GPU memory plan uses, and what verl 0.9.1's FSDP checkpoint manager writes into
`global_step_N/actor/` for each entry of `save_contents`, plus what the step folder holds beside it:

- `model`: the FSDP shard of every parameter in `model_dtype` (LoRA: the frozen base in `model_dtype` and the fp32
  adapters), about 1 KiB of pickled metadata a tensor;
- `optimizer`: AdamW's two moments of every trained parameter in its dtype (LoRA: the fp32 adapters only);
- `extra`: the learning-rate scheduler and the RNG states;
- `hf_model`: the whole model in `model_dtype` as safetensors (LoRA: while medplay's export splits it, the PEFT
  file, then the adapter and the merged model: the base plus two copies of the adapters at the peak);
- always: the tokenizer and config files (`huggingface/`, as large as the model folder's own), the dataloader
  state `data.pt` and medplay's marker.

Checked against the tiny cpu-smoke model's real checkpoint in docs/reliability.md ("Retention and the disk a run
needs"). The launcher's disk plan (launcher/plan/disk_plan.py) and the probe size the disk from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from medical_team.hardware.memory_terms import DTYPE_BYTES
from medical_team.hardware.plan_inputs import PlanInputs

MIB = 1024**2
# Pickled metadata of one tensor in an FSDP shard file (a DTensor's placement and shape; measured on the tiny model:
# 15.7 KB over 24 tensors in the model shard, 29 KB over 48 moments in the optimizer's).
TENSOR_OVERHEAD_BYTES = 1024
# Tensors of one decoder layer: q, k, v, o, gate, up, down, two layer norms, q_norm and k_norm (Qwen3).
TENSORS_PER_LAYER = 11
# The scheduler's and RNG states (`extra`: 14.8 KB on CPU; a GPU adds its CUDA RNG state), the dataloader state
# (`data.pt`: 6.9 KB) and medplay's marker (its manifest: ~100 B a file): a bound.
STATE_BYTES = 64 * 1024
# The tokenizer and config files verl copies into `huggingface/` when the model folder is not on this machine
# (Qwen3's tokenizer.json, vocab.json and merges.txt: ~16 MiB).
SIDE_FILES_BYTES = 16 * MIB
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
ADAPTER_BYTES = 4  # LoRA adapters train in fp32


def side_files_bytes(model_path: str) -> int:
    """The model folder's files but its weights (tokenizer, configs), which verl copies into every checkpoint;
    `SIDE_FILES_BYTES` when the folder is not on this machine."""
    folder = Path(model_path).expanduser()
    if not folder.is_dir():
        return SIDE_FILES_BYTES
    return sum(
        path.stat().st_size for path in folder.rglob("*") if path.is_file() and path.suffix not in WEIGHT_SUFFIXES
    )


def checkpoint_parts(inputs: PlanInputs, save_contents: Sequence[str], side_bytes: int) -> dict[str, int]:
    """Bytes of each part of one checkpoint (only the parts `save_contents` asks for, and the state files)."""
    shape = inputs.policy
    weight_bytes = DTYPE_BYTES.get(inputs.model_dtype, 4)
    tensors = shape.layers * TENSORS_PER_LAYER + 2 + (0 if shape.tie_embeddings else 1)
    adapters = shape.lora_params(inputs.lora_rank, inputs.target_modules) if inputs.lora_rank > 0 else 0
    adapter_tensors = 2 * shape.layers * 7 if adapters else 0  # A and B of each adapted projection, at most
    parts = {}
    if "model" in save_contents:
        parts["model"] = (
            shape.params * weight_bytes + adapters * ADAPTER_BYTES + (tensors + adapter_tensors) * TENSOR_OVERHEAD_BYTES
        )
    if "optimizer" in save_contents:
        trained, trained_bytes, trained_tensors = (
            (adapters, ADAPTER_BYTES, adapter_tensors) if adapters else (shape.params, weight_bytes, tensors)
        )
        parts["optimizer"] = 2 * (trained * trained_bytes + trained_tensors * TENSOR_OVERHEAD_BYTES)
    if "hf_model" in save_contents:
        parts["hf_model"] = shape.params * weight_bytes + 2 * adapters * ADAPTER_BYTES
    parts["tokenizer and configs"] = side_bytes
    parts["state"] = STATE_BYTES
    return parts


def checkpoint_bytes(inputs: PlanInputs, save_contents: Sequence[str], side_bytes: int) -> int:
    """The disk one checkpoint takes (`checkpoint_parts` added up)."""
    return sum(checkpoint_parts(inputs, save_contents, side_bytes).values())
