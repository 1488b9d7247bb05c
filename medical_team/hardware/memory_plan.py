"""The GPU memory plan: the peak of every phase of a training step on one GPU, from the composed config.

Pure functions over plain values (no verl, Ray, vLLM or torch): `memory_plan` adds up the terms of each phase
(rollout, weight sync, old_log_prob, ref, update_actor; memory_terms.py) over `PlanInputs` (plan_inputs.py),
with each vLLM engine's share and KV cache (vllm_engines.py), says whether the peak stays under the bar and what
to change when it does not. docs/tuning.md explains every term and its measured source.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from medical_team.hardware.memory_terms import (
    ALLOCATOR_SLACK,
    TRAINER_CONTEXT_GIB,
    VLLM_ASLEEP_GIB,
    forward_activations_gib,
    fsdp_working_gib,
    micro_batch_tokens,
    training_activations_gib,
    training_state_gib,
)
from medical_team.hardware.plan_inputs import PlanInputs
from medical_team.hardware.vllm_engines import EngineCache, engine_caches, vllm_caches

# The bar a plan must stay under: the share of the card's memory the busiest phase may use.
FIT_BAR = 0.90


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
    # Each vLLM engine's share and KV cache (vllm_engines.py), by name: `rollout`, and `judge` when served here.
    engines: dict[str, EngineCache] = field(default_factory=dict)
    # A judge served here shares this card (false: a GPU of its own, where its share is all there is).
    judge_beside: bool = True

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


@dataclass(frozen=True)
class ActorMemory:
    """The actor's training state on the GPU (GiB): between phases, while computing, and in the update."""

    params_resident: float
    params_computing: float
    optimizer_resident: float
    update_gradients: float
    update_optimizer: float
    gathered: float  # the bf16 units FSDP gathers while computing


def actor_memory(inputs: PlanInputs) -> ActorMemory:
    """Where the actor's parameters, gradients and AdamW moments live in each phase, given its offloading: each GPU
    holds its FSDP shard of them."""
    state = {name: gib / inputs.fsdp_ranks for name, gib in training_state_gib(inputs).items()}
    streamed = inputs.offload_policy  # FSDP2 CPUOffloadPolicy: weights, gradients and AdamW live on the host
    return ActorMemory(
        params_resident=0.0 if (streamed or inputs.param_offload) else state["parameters"],
        params_computing=0.0 if streamed else state["parameters"],
        optimizer_resident=0.0 if (streamed or inputs.optimizer_offload) else state["optimizer"],
        # verl's FSDP engine brings offloaded AdamW moments back to the GPU for the update.
        update_gradients=0.0 if streamed else state["gradients"],
        update_optimizer=0.0 if streamed else state["optimizer"],
        gathered=fsdp_working_gib(inputs.policy),
    )


def _trainer(terms: dict[str, float]) -> dict[str, float]:
    """The trainer's terms plus its allocator slack and CUDA context."""
    allocated = sum(terms.values())
    return {**terms, "allocator_slack": allocated * ALLOCATOR_SLACK, "trainer_cuda_context": TRAINER_CONTEXT_GIB}


def _forward_phase(name: str, inputs: PlanInputs, actor: ActorMemory, params: float, budget: int, beside: dict) -> Phase:
    """A forward-only phase (old_log_prob, ref): the weights, gathered units and one micro-batch's logits."""
    terms = {
        "parameters": params,
        "optimizer": actor.optimizer_resident,
        "fsdp_gathered_weights": actor.gathered,
        "logits_and_activations": forward_activations_gib(inputs, micro_batch_tokens(inputs, budget)),
    }
    return Phase(name, {**_trainer(terms), **beside})


def step_phases(inputs: PlanInputs, engines: dict[str, EngineCache], judge_beside: bool = True) -> list[Phase]:
    """Each phase of a step with its terms, the vLLM engines beside the trainer included (the judge's unless it has
    a GPU of its own: `judge_beside` false)."""
    actor = actor_memory(inputs)
    judge = {"judge_vllm_share": engines["judge"].engine_gib} if inputs.judge is not None and judge_beside else {}
    asleep = {"rollout_vllm_asleep": VLLM_ASLEEP_GIB, **judge}
    rollout = {"parameters": actor.params_resident, "optimizer": actor.optimizer_resident}
    sync = {
        "parameters": actor.params_computing,
        "optimizer": actor.optimizer_resident,
        "sync_buckets": 2 * inputs.weight_bucket_mib / 1024,
    }
    phases = [
        Phase("rollout", {**_trainer(rollout), "rollout_vllm_share": engines["rollout"].engine_gib, **judge}),
        Phase(
            "weight_sync",
            {**_trainer(sync), "rollout_vllm_weights": inputs.policy.weights_gib() + VLLM_ASLEEP_GIB, **judge},
        ),
        _forward_phase("old_log_prob", inputs, actor, actor.params_computing, inputs.log_prob_tokens, asleep),
    ]
    if inputs.needs_reference:
        # LoRA: the reference is the actor without its adapters; otherwise verl keeps the reference's weights on
        # the host (FSDP2 CPU offload) and brings one unit at a time.
        params = actor.params_computing if inputs.lora_rank > 0 else actor.params_resident
        phases.append(_forward_phase("ref", inputs, actor, params, inputs.ref_tokens, asleep))
    activations, logits = training_activations_gib(inputs, micro_batch_tokens(inputs, inputs.ppo_tokens))
    update = {
        "parameters": actor.params_computing,
        "gradients": actor.update_gradients,
        "optimizer": actor.update_optimizer,
        "fsdp_gathered_weights": actor.gathered,
        "activations": activations,
        "logits": logits,
    }
    phases.append(Phase("update_actor", {**_trainer(update), **asleep}))
    return phases


def plan_notes(inputs: PlanInputs, engines: dict[str, EngineCache]) -> list[str]:
    """What the plan assumed: the models' shapes, a setting that does not act, games per step, the KV caches."""
    shape = inputs.policy
    notes = [f"policy shape: {shape.name} ({shape.params / 1e9:.3f} B parameters, {shape.source})"]
    if inputs.judge is not None:
        notes.append(
            f"judge shape: {inputs.judge.name} ({inputs.judge.params / 1e9:.3f} B parameters, {inputs.judge.source})"
        )
    if inputs.entropy_chunking and not inputs.use_remove_padding and not inputs.use_fused_kernels:
        notes.append("entropy_from_logits_with_chunking acts only with use_remove_padding=true: full logits planned")
    notes.append(f"games per step: {inputs.games_per_step} (data.train_batch_size x actor_rollout_ref.rollout.n)")
    if inputs.fsdp_ranks > 1:
        notes.append(f"the actor's parameters, gradients and AdamW: 1/{inputs.fsdp_ranks} on each GPU (FSDP shards)")
    return notes + [engine.note() for engine in engines.values()]


def memory_plan(inputs: PlanInputs, vram_gib: float, judge_beside: bool = True) -> MemoryPlan:
    """The peak of each phase of a step on a card of `vram_gib` GiB (docs/tuning.md: the terms).

    A judge served here shares the card unless `judge_beside` is false (a GPU of its own, as large: the plan still
    sizes its KV cache and names its problems).
    """
    engines = {engine.name: engine for engine in engine_caches(inputs, vram_gib)}
    kv_cache, problems = vllm_caches(inputs, vram_gib)
    return MemoryPlan(
        vram_gib=vram_gib,
        phases=step_phases(inputs, engines, judge_beside),
        kv_cache=kv_cache,
        notes=plan_notes(inputs, engines),
        problems=problems,
        engines=engines,
        judge_beside=judge_beside,
    )


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
