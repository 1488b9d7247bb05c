"""The GPU memory plan: the peak of every phase of a training step on one GPU, from the composed config.

Pure functions over plain values (no verl, Ray, vLLM or torch): `plan_inputs` reads the composed config (as a
plain dict), `memory_plan` adds up the terms of each phase (rollout, old_log_prob, ref, update_actor, weight sync)
and says whether the peak stays under the bar. It also sizes each vLLM engine's KV cache in bytes (`vllm_caches`):
what its share leaves after weights and overhead, the figure `medplay train` hands both engines so that neither
sizes itself by profiling a GPU that other processes are filling. docs/tuning.md explains every term and its
measured source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from medical_team.judge_kinds import BACKEND_KINDS
from medical_team.models.shape import GIB, MEDGEMMA_4B, QWEN3_4B, ModelShape, model_shape

MIB = 1024**2
# The bar a plan must stay under: the share of the card's memory the busiest phase may use.
FIT_BAR = 0.90

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
PHASES = ("rollout", "weight_sync", "old_log_prob", "ref", "update_actor")


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


def _get(config: Mapping, dotted: str):
    """A dotted key of the composed config (None where it is null); KeyError naming a key the config lacks.

    The plan has no defaults of its own: every value it reads is the config's (configs/medplay.yaml, verl's
    `ppo_trainer`, the profile).
    """
    node = config
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(f"the memory plan reads {dotted}, which the composed config lacks")
        node = node[part]
    return node


def _budget(config: Mapping, section: str, tokens_key: str, rows_key: str, dynamic_key: str, max_sequence: int) -> int:
    """Tokens of one micro-batch: the token budget with dynamic batching, else rows x the longest sequence."""
    if _get(config, f"{section}.{dynamic_key}"):
        return int(_get(config, f"{section}.{tokens_key}"))
    return int(_get(config, f"{section}.{rows_key}")) * max_sequence


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


def plan_inputs(config: Mapping) -> PlanInputs:
    """What the memory plan reads from a composed training config (a plain nested dict)."""
    arr = "actor_rollout_ref"
    fsdp = f"{arr}.actor.fsdp_config"
    max_sequence = int(_get(config, "data.max_prompt_length")) + int(
        _get(config, "data.max_response_length")
    )
    judge_kind = BACKEND_KINDS.get(_get(config, "medplay.judge.backend"))
    judge_on_gpu = judge_kind is not None and judge_kind.served_here
    target = _get(config, f"{arr}.model.target_modules")
    chunking = bool(_get(config, f"{arr}.actor.entropy_from_logits_with_chunking")) or bool(
        _get(config, f"{fsdp}.entropy_from_logits_with_chunking")
    )
    return PlanInputs(
        policy=model_shape(str(_get(config, f"{arr}.model.path")), QWEN3_4B),
        judge=model_shape(str(_get(config, "medplay.judge.model")), MEDGEMMA_4B).language_model if judge_on_gpu else None,
        lora_rank=int(_get(config, f"{arr}.model.lora_rank")),
        target_modules=target if isinstance(target, str) else tuple(target),
        model_dtype=str(_get(config, f"{fsdp}.model_dtype")),
        param_offload=bool(_get(config, f"{fsdp}.param_offload")),
        optimizer_offload=bool(_get(config, f"{fsdp}.optimizer_offload")),
        offload_policy=bool(_get(config, f"{fsdp}.offload_policy")),
        gradient_checkpointing=bool(_get(config, f"{arr}.model.enable_gradient_checkpointing")),
        use_remove_padding=bool(_get(config, f"{arr}.model.use_remove_padding")),
        use_fused_kernels=bool(_get(config, f"{arr}.model.use_fused_kernels")),
        entropy_chunking=chunking,
        entropy_chunk_tokens=int(_get(config, f"{arr}.actor.entropy_from_logits_chunk_size")),
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
            f"{arr}.rollout",
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
        needs_reference=bool(_get(config, "algorithm.use_kl_in_reward"))
        or bool(_get(config, f"{arr}.actor.use_kl_loss")),
        rollout_share=float(_get(config, f"{arr}.rollout.gpu_memory_utilization")),
        rollout_kv_bytes=_bytes(_get(config, f"{arr}.rollout.engine_kwargs.vllm.kv_cache_memory_bytes")),
        weight_bucket_mib=int(_get(config, f"{arr}.rollout.checkpoint_engine.update_weights_bucket_megabytes")),
        judge_share=float(_get(config, "medplay.judge.serve.gpu_memory_utilization")) if judge_on_gpu else 0.0,
        judge_kv_bytes=_bytes(_get(config, "medplay.judge.serve.kv_cache_memory_bytes")) if judge_on_gpu else None,
        judge_quantization=vllm_quantization(_get(config, "medplay.judge.serve.extra_args")) if judge_on_gpu else None,
        judge_max_model_len=int(_get(config, "medplay.judge.serve.max_model_len")),
        max_sequence=max_sequence,
        games_per_step=int(_get(config, "data.train_batch_size")) * int(_get(config, f"{arr}.rollout.n")),
    )


@dataclass(frozen=True)
class Phase:
    """One phase of a step: its terms (GiB) and their sum, the GPU memory it peaks at."""

    name: str
    terms: dict[str, float]

    @property
    def peak_gib(self) -> float:
        """The phase's peak: all its terms together."""
        return sum(self.terms.values())


@dataclass(frozen=True)
class MemoryPlan:
    """Every phase's peak on a card of `vram_gib`, whether the busiest stays under the bar, and what to change."""

    vram_gib: float
    phases: list[Phase]
    kv_cache: dict[str, dict[str, float]]
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    bar: float = FIT_BAR

    @property
    def peak(self) -> Phase:
        """The busiest phase."""
        return max(self.phases, key=lambda phase: phase.peak_gib)

    @property
    def peak_fraction(self) -> float:
        """The busiest phase's share of the card."""
        return self.peak.peak_gib / self.vram_gib

    @property
    def fits(self) -> bool:
        """True when the busiest phase stays under the bar and both vLLM shares hold their caches."""
        return self.peak_fraction <= self.bar and not self.problems

    def largest_terms(self, count: int = 5) -> list[dict[str, object]]:
        """The biggest terms of the busiest phase."""
        terms = sorted(self.peak.terms.items(), key=lambda item: -item[1])[:count]
        return [{"term": name, "gib": round(gib, 2), "phase": self.peak.name} for name, gib in terms]

    def to_json_dict(self) -> dict:
        """The plan as plain JSON-ready data."""
        return {
            "fits": self.fits,
            "bar": self.bar,
            "vram_gib": round(self.vram_gib, 2),
            "peak_phase": self.peak.name,
            "peak_gib": round(self.peak.peak_gib, 2),
            "peak_fraction": round(self.peak_fraction, 4),
            "largest_terms": self.largest_terms(),
            "phases": {
                phase.name: {
                    "peak_gib": round(phase.peak_gib, 2),
                    "terms": {k: round(v, 3) for k, v in phase.terms.items()},
                }
                for phase in self.phases
            },
            "kv_cache": self.kv_cache,
            "advice": advice(self),
            "problems": self.problems,
            "notes": self.notes,
        }


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


def _trainer(terms: dict[str, float]) -> dict[str, float]:
    """The trainer's terms plus its allocator slack and CUDA context."""
    allocated = sum(terms.values())
    return {**terms, "allocator_slack": allocated * ALLOCATOR_SLACK, "trainer_cuda_context": TRAINER_CONTEXT_GIB}


def memory_plan(inputs: PlanInputs, vram_gib: float) -> MemoryPlan:
    """The peak of each phase of a step on a card of `vram_gib` GiB (docs/tuning.md: the terms)."""
    shape = inputs.policy
    state = training_state_gib(inputs)
    streamed = inputs.offload_policy  # FSDP2 CPUOffloadPolicy: weights, gradients and AdamW live on the host
    params_resident = 0.0 if (streamed or inputs.param_offload) else state["parameters"]
    params_computing = 0.0 if streamed else state["parameters"]
    optimizer_resident = 0.0 if (streamed or inputs.optimizer_offload) else state["optimizer"]
    working = fsdp_working_gib(shape)
    engines = {engine.name: engine for engine in engine_caches(inputs, vram_gib)}
    judge = {"judge_vllm_share": engines["judge"].engine_gib} if inputs.judge is not None else {}
    asleep = {"rollout_vllm_asleep": VLLM_ASLEEP_GIB, **judge}

    old_tokens = micro_batch_tokens(inputs, inputs.log_prob_tokens)
    ref_tokens = micro_batch_tokens(inputs, inputs.ref_tokens)
    ppo_tokens = micro_batch_tokens(inputs, inputs.ppo_tokens)
    activations, logits = training_activations_gib(inputs, ppo_tokens)
    phases = [
        Phase(
            "rollout",
            {
                **_trainer({"parameters": params_resident, "optimizer": optimizer_resident}),
                "rollout_vllm_share": engines["rollout"].engine_gib,
                **judge,
            },
        ),
        Phase(
            "weight_sync",
            {
                **_trainer(
                    {
                        "parameters": params_computing,
                        "optimizer": optimizer_resident,
                        "sync_buckets": 2 * inputs.weight_bucket_mib / 1024,
                    }
                ),
                "rollout_vllm_weights": shape.weights_gib() + VLLM_ASLEEP_GIB,
                **judge,
            },
        ),
        Phase(
            "old_log_prob",
            {
                **_trainer(
                    {
                        "parameters": params_computing,
                        "optimizer": optimizer_resident,
                        "fsdp_gathered_weights": working,
                        "logits_and_activations": forward_activations_gib(inputs, old_tokens),
                    }
                ),
                **asleep,
            },
        ),
    ]
    if inputs.needs_reference:
        # LoRA: the reference is the actor without its adapters; otherwise verl keeps the reference's weights on
        # the host (FSDP2 CPU offload) and brings one unit at a time.
        phases.append(
            Phase(
                "ref",
                {
                    **_trainer(
                        {
                            "parameters": params_computing if inputs.lora_rank > 0 else params_resident,
                            "optimizer": optimizer_resident,
                            "fsdp_gathered_weights": working,
                            "logits_and_activations": forward_activations_gib(inputs, ref_tokens),
                        }
                    ),
                    **asleep,
                },
            )
        )
    phases.append(
        Phase(
            "update_actor",
            {
                **_trainer(
                    {
                        "parameters": params_computing,
                        # verl's FSDP engine brings offloaded AdamW moments back to the GPU for the update.
                        "gradients": 0.0 if streamed else state["gradients"],
                        "optimizer": 0.0 if streamed else state["optimizer"],
                        "fsdp_gathered_weights": working,
                        "activations": activations,
                        "logits": logits,
                    }
                ),
                **asleep,
            },
        )
    )
    kv_cache, problems = vllm_caches(inputs, vram_gib)
    notes = [f"policy shape: {shape.name} ({shape.params / 1e9:.3f} B parameters, {shape.source})"]
    if inputs.judge is not None:
        notes.append(
            f"judge shape: {inputs.judge.name} ({inputs.judge.params / 1e9:.3f} B parameters, {inputs.judge.source})"
        )
    if inputs.entropy_chunking and not inputs.use_remove_padding and not inputs.use_fused_kernels:
        notes.append("entropy_from_logits_with_chunking acts only with use_remove_padding=true: full logits planned")
    notes.append(f"games per step: {inputs.games_per_step} (data.train_batch_size x actor_rollout_ref.rollout.n)")
    notes += [engine.note() for engine in engines.values()]
    return MemoryPlan(vram_gib=vram_gib, phases=phases, kv_cache=kv_cache, notes=notes, problems=problems)


@dataclass(frozen=True)
class EngineCache:
    """One vLLM engine's memory: weights, overhead and a KV cache sized from its share of the card or given in bytes."""

    name: str
    share_gib: float
    weights_gib: float
    # What the share leaves after weights and overhead (negative: short of it), or the given size.
    kv_gib: float
    # What vLLM is handed (`kv_cache_memory_bytes`): kv_gib in whole MiB, 0 when the share leaves nothing.
    kv_bytes: int
    kv_bytes_per_token: int
    request_tokens: int
    # The config key that gave the size in bytes; None: sized from the share.
    bytes_key: str | None
    share_key: str

    @property
    def engine_gib(self) -> float:
        """The engine's memory while awake: its share, or weights + overhead + the given KV cache."""
        return self.share_gib if self.bytes_key is None else self.weights_gib + VLLM_OVERHEAD_GIB + self.kv_gib

    @property
    def kv_tokens(self) -> int:
        """Tokens the KV cache holds."""
        return self.kv_bytes // self.kv_bytes_per_token

    @property
    def requests_at_once(self) -> int:
        """Longest requests the KV cache holds together."""
        return self.kv_tokens // self.request_tokens

    def note(self) -> str:
        """One line: the bytes this engine's KV cache gets and what they hold."""
        origin = self.bytes_key or (
            f"{self.share_key} x card - {self.weights_gib:.2f} GiB of weights - {VLLM_OVERHEAD_GIB:g} GiB of overhead"
        )
        return (
            f"{self.name} vLLM KV cache: {self.kv_bytes} bytes = {self.kv_bytes / GIB:.2f} GiB ({origin}): "
            f"{self.kv_tokens} tokens, {self.requests_at_once} requests of {self.request_tokens} tokens at once"
        )


def engine_caches(inputs: PlanInputs, vram_gib: float) -> list[EngineCache]:
    """The rollout's and (when served here) the judge's vLLM KV cache on a card of `vram_gib` GiB."""
    arr = "actor_rollout_ref.rollout"
    engines = [("rollout", inputs.policy, inputs.rollout_share, inputs.rollout_kv_bytes, None, inputs.max_sequence,
                f"{arr}.gpu_memory_utilization", f"{arr}.engine_kwargs.vllm.kv_cache_memory_bytes")]  # fmt: skip
    if inputs.judge is not None:
        engines.append(("judge", inputs.judge, inputs.judge_share, inputs.judge_kv_bytes, inputs.judge_quantization,
                        inputs.judge_max_model_len, "medplay.judge.serve.gpu_memory_utilization",
                        "medplay.judge.serve.kv_cache_memory_bytes"))  # fmt: skip
    caches = []
    for name, shape, share, given, quantization, request, share_key, bytes_key in engines:
        weights = shape.weights_gib(quantization)
        if given is None:
            kv_gib = share * vram_gib - weights - VLLM_OVERHEAD_GIB
            kv_bytes = max(0, int(kv_gib * GIB) // MIB * MIB)
        else:
            kv_gib, kv_bytes = given / GIB, given
        caches.append(EngineCache(name, share * vram_gib, weights, kv_gib, kv_bytes, shape.kv_bytes_per_token,
                                  request, None if given is None else bytes_key, share_key))  # fmt: skip
    return caches


def vllm_caches(inputs: PlanInputs, vram_gib: float) -> tuple[dict[str, dict[str, float]], list[str]]:
    """Each vLLM engine's KV cache (GiB, bytes, tokens, requests) and a problem when it cannot hold one request."""
    caches, problems = {}, []
    for engine in engine_caches(inputs, vram_gib):
        caches[engine.name] = {
            "share_gib": round(engine.share_gib, 2),
            "weights_gib": round(engine.weights_gib, 2),
            "kv_cache_gib": round(engine.kv_gib, 2),
            "kv_cache_bytes": engine.kv_bytes,
            "kv_tokens": engine.kv_tokens,
            "requests_at_once": engine.requests_at_once,
        }
        if engine.requests_at_once >= 1:
            continue
        if engine.bytes_key is None:
            problems.append(
                f"the {engine.name} vLLM share ({engine.share_gib / vram_gib:.4g} x {vram_gib:.1f} GiB) holds "
                f"{engine.weights_gib:.1f} GiB of weights and {VLLM_OVERHEAD_GIB:g} GiB of overhead but no "
                f"{engine.request_tokens}-token request: raise {engine.share_key}"
            )
        else:
            problems.append(
                f"the {engine.name} vLLM KV cache ({engine.kv_bytes} bytes) holds no {engine.request_tokens}-token "
                f"request: raise {engine.bytes_key}"
            )
    return caches, problems


# What to change when a term is the largest of a phase that does not fit.
KNOBS = {
    "logits": "actor_rollout_ref.model.use_fused_kernels=true (logits 512 tokens at a time)",
    "logits_and_activations": "actor_rollout_ref.model.use_fused_kernels=true, or a smaller "
    "actor_rollout_ref.rollout/ref.log_prob_max_token_len_per_gpu",
    "activations": "a smaller actor_rollout_ref.actor.ppo_max_token_len_per_gpu",
    "optimizer": "LoRA (actor_rollout_ref.model.lora_rank=64) or actor_rollout_ref.actor.fsdp_config.offload_policy=true",
    "gradients": "LoRA (actor_rollout_ref.model.lora_rank=64) or actor_rollout_ref.actor.fsdp_config.offload_policy=true",
    "parameters": "actor_rollout_ref.actor.fsdp_config.param_offload=true (between phases), LoRA with "
    "actor_rollout_ref.actor.fsdp_config.model_dtype=bf16, or offload_policy=true",
    "judge_vllm_share": "a smaller medplay.judge.serve.gpu_memory_utilization, or a judge elsewhere "
    "(medplay.judge.backend=openai)",
    "rollout_vllm_share": "a smaller actor_rollout_ref.rollout.gpu_memory_utilization",
    "rollout_vllm_weights": "LoRA with layered_summon (the rollout's weights are the policy's own)",
    "sync_buckets": "a smaller actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes",
}


def advice(plan: MemoryPlan) -> list[str]:
    """For each phase over the bar: its peak and the knob for its largest term that a config can change."""
    lines = []
    for phase in plan.phases:
        fraction = phase.peak_gib / plan.vram_gib
        if fraction <= plan.bar:
            continue
        name, gib = max(((k, v) for k, v in phase.terms.items() if k in KNOBS), key=lambda item: item[1])
        knob = KNOBS[name]
        if name == "optimizer" and phase.name != "update_actor":
            knob = "actor_rollout_ref.actor.fsdp_config.optimizer_offload=true (AdamW on the host between updates)"
        lines.append(
            f"phase {phase.name} peaks at {phase.peak_gib:.1f} GiB ({100 * fraction:.0f} % of {plan.vram_gib:.1f} GiB, "
            f"above {100 * plan.bar:.0f} %); its largest term is {name} ({gib:.1f} GiB): {knob}"
        )
    return lines + list(plan.problems)
