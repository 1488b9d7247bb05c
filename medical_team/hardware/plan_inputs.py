"""What the GPU memory plan reads: verl's settings of the composed config, and the served judge's figures.

`plan_inputs` reads verl's part of a composed config (a plain nested dict: the policy, its batches, offloading,
the rollout's vLLM share) and takes the judge's figures from the caller, who has them from the judge's checked
settings (`launcher/plan/memory_inputs.py`). The config keys the plan and the run plan read or write are named here once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from medical_team.models.shape import QWEN3_4B, ModelShape, model_shape

ROLLOUT = "actor_rollout_ref.rollout"
# The rollout's vLLM: its share of the card, and its KV cache in bytes (verl passes engine_kwargs.vllm to vLLM).
ROLLOUT_SHARE_KEY = f"{ROLLOUT}.gpu_memory_utilization"
ROLLOUT_KV_KEY = f"{ROLLOUT}.engine_kwargs.vllm.kv_cache_memory_bytes"
# The served judge's vLLM (medplay.judge.serve): the same two figures.
JUDGE_SHARE_KEY = "medplay.judge.serve.gpu_memory_utilization"
JUDGE_KV_KEY = "medplay.judge.serve.kv_cache_memory_bytes"


@dataclass(frozen=True)
class ServedJudgeInputs:
    """The served judge's figures the plan reads (from `medplay.judge`'s checked settings)."""

    shape: ModelShape  # the language model vLLM loads (`--language-model-only`)
    share: float  # JUDGE_SHARE_KEY
    kv_bytes: int | None  # JUDGE_KV_KEY; None: from the share
    quantization: str | None  # `--quantization` among its extra arguments
    max_model_len: int  # its longest request


@dataclass(frozen=True)
class PlanInputs:
    """The settings of a composed config that decide GPU memory."""

    policy: ModelShape
    judge: ModelShape | None
    lora_rank: int
    target_modules: str | tuple[str, ...]
    model_dtype: str
    param_offload: bool
    optimizer_offload: bool
    offload_policy: bool
    gradient_checkpointing: bool
    use_remove_padding: bool
    use_fused_kernels: bool
    entropy_chunking: bool
    entropy_chunk_tokens: int
    ppo_tokens: int
    log_prob_tokens: int
    ref_tokens: int
    needs_reference: bool
    rollout_share: float
    # A KV cache size the config gives in bytes (verl's engine_kwargs.vllm, medplay.judge.serve); None: from the share.
    rollout_kv_bytes: int | None
    weight_bucket_mib: int
    judge_share: float
    judge_kv_bytes: int | None
    judge_quantization: str | None
    judge_max_model_len: int
    max_sequence: int
    games_per_step: int
    # GPUs the actor's FSDP shards its parameters, gradients and AdamW over (one GPU holds 1/fsdp_ranks of them).
    fsdp_ranks: int


def config_value(config: Mapping, dotted: str):
    """A dotted key of the composed config (None where it is null); KeyError naming a key the config lacks.

    The plan has no defaults of its own: every value it reads is the config's (verl's `ppo_trainer`, the profile).
    """
    node = config
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(f"the memory plan reads {dotted}, which the composed config lacks")
        node = node[part]
    return node


def _budget(config: Mapping, section: str, tokens_key: str, rows_key: str, dynamic_key: str, max_sequence: int) -> int:
    """Tokens of one micro-batch: the token budget with dynamic batching, else rows x the longest sequence."""
    if config_value(config, f"{section}.{dynamic_key}"):
        return int(config_value(config, f"{section}.{tokens_key}"))
    return int(config_value(config, f"{section}.{rows_key}")) * max_sequence


def vllm_quantization(extra_args: Sequence[str]) -> str | None:
    """`--quantization X` (or `--quantization=X`) among a `vllm serve` command line's extra arguments."""
    args = [str(arg) for arg in extra_args]
    for index, arg in enumerate(args):
        if arg == "--quantization" and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith("--quantization="):
            return arg.split("=", 1)[1]
    return None


def _bytes(value: object) -> int | None:
    """A byte count from the config, or None when it is not set."""
    return None if value is None else int(value)


def plan_inputs(config: Mapping, judge: ServedJudgeInputs | None) -> PlanInputs:
    """What the memory plan reads from a composed training config (a plain nested dict) and the judge served here."""
    arr = "actor_rollout_ref"
    fsdp = f"{arr}.actor.fsdp_config"
    max_sequence = int(config_value(config, "data.max_prompt_length")) + int(
        config_value(config, "data.max_response_length")
    )
    target = config_value(config, f"{arr}.model.target_modules")
    chunking = bool(config_value(config, f"{arr}.actor.entropy_from_logits_with_chunking")) or bool(
        config_value(config, f"{fsdp}.entropy_from_logits_with_chunking")
    )
    return PlanInputs(
        policy=model_shape(str(config_value(config, f"{arr}.model.path")), QWEN3_4B),
        judge=None if judge is None else judge.shape,
        lora_rank=int(config_value(config, f"{arr}.model.lora_rank")),
        target_modules=target if isinstance(target, str) else tuple(target),
        model_dtype=str(config_value(config, f"{fsdp}.model_dtype")),
        param_offload=bool(config_value(config, f"{fsdp}.param_offload")),
        optimizer_offload=bool(config_value(config, f"{fsdp}.optimizer_offload")),
        offload_policy=bool(config_value(config, f"{fsdp}.offload_policy")),
        gradient_checkpointing=bool(config_value(config, f"{arr}.model.enable_gradient_checkpointing")),
        use_remove_padding=bool(config_value(config, f"{arr}.model.use_remove_padding")),
        use_fused_kernels=bool(config_value(config, f"{arr}.model.use_fused_kernels")),
        entropy_chunking=chunking,
        entropy_chunk_tokens=int(config_value(config, f"{arr}.actor.entropy_from_logits_chunk_size")),
        ppo_tokens=_budget(
            config,
            f"{arr}.actor",
            "ppo_max_token_len_per_gpu",
            "ppo_micro_batch_size_per_gpu",
            "use_dynamic_bsz",
            max_sequence,
        ),
        log_prob_tokens=_budget(
            config,
            ROLLOUT,
            "log_prob_max_token_len_per_gpu",
            "log_prob_micro_batch_size_per_gpu",
            "log_prob_use_dynamic_bsz",
            max_sequence,
        ),
        ref_tokens=_budget(
            config,
            f"{arr}.ref",
            "log_prob_max_token_len_per_gpu",
            "log_prob_micro_batch_size_per_gpu",
            "log_prob_use_dynamic_bsz",
            max_sequence,
        ),
        needs_reference=bool(config_value(config, "algorithm.use_kl_in_reward"))
        or bool(config_value(config, f"{arr}.actor.use_kl_loss")),
        rollout_share=float(config_value(config, ROLLOUT_SHARE_KEY)),
        rollout_kv_bytes=_bytes(config_value(config, ROLLOUT_KV_KEY)),
        weight_bucket_mib=int(config_value(config, f"{ROLLOUT}.checkpoint_engine.update_weights_bucket_megabytes")),
        judge_share=0.0 if judge is None else judge.share,
        judge_kv_bytes=None if judge is None else judge.kv_bytes,
        judge_quantization=None if judge is None else judge.quantization,
        judge_max_model_len=0 if judge is None else judge.max_model_len,
        max_sequence=max_sequence,
        games_per_step=int(config_value(config, "data.train_batch_size")) * int(config_value(config, f"{ROLLOUT}.n")),
        fsdp_ranks=fsdp_ranks(config),
    )


def fsdp_ranks(config: Mapping) -> int:
    """The GPUs one FSDP group spans: every policy GPU (trainer.n_gpus_per_node x nnodes), or fsdp_size when set."""
    world = int(config_value(config, "trainer.n_gpus_per_node")) * int(config_value(config, "trainer.nnodes"))
    size = int(config_value(config, "actor_rollout_ref.actor.fsdp_config.fsdp_size"))
    return min(size, world) if size > 0 else world
