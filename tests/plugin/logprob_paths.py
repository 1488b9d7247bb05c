"""Log-probs, entropy and one policy update of verl's own FSDP2 actor on CPU, per set of config overrides.

    python tests/plugin/logprob_paths.py MODEL_DIR OUTPUT.pt NAME=OVERRIDE,OVERRIDE,... [NAME=...]

For each variant the actor is verl's `ActorRolloutRefWorker` (role `actor`) built in this process
from the `cpu-smoke` config as `medplay train` composes it plus the variant's overrides, one rank on
gloo, computing in fp32. It scores a fixed batch of sequences of different lengths with
`compute_log_prob` (what the trainer's old_log_prob phase calls) and makes one update with
`update_actor` (verl's `ppo_loss`: policy loss plus entropy bonus, backward, optimizer step).
OUTPUT.pt maps each name to its response log-probs, entropy and loss metrics. Variants with
`use_fused_kernels=true` must come last: verl's fused forward replaces the model class's `forward`
for the rest of the process.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

BATCH_SEED = 1234
# (prompt tokens, response tokens) per sequence: different lengths, so padding and packing both matter.
SEQUENCE_LENGTHS = ((37, 23), (12, 48), (64, 5), (20, 31))
ADVANTAGE_SCALE = 1.0
# old_log_probs = -log(V) + noise: ratios around 1, some of them clipped, so the loss depends on the log-probs.
OLD_LOG_PROB_NOISE = 0.3
# An entropy bonus puts the entropy's backward (fused or chunked) into the gradient too.
ENTROPY_COEFF = 0.01


def single_rank_environment() -> None:
    """What verl's Ray worker group would give rank 0 of 1, plus the cpu-smoke profile's platform variables."""
    from medical_team.run.port_claim import hold_port

    os.environ.update(
        RANK="0",
        WORLD_SIZE="1",
        LOCAL_RANK="0",
        LOCAL_WORLD_SIZE="1",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(hold_port("the process group of one rank")),
        VERL_PLATFORM="cpu",
        VERL_ENGINE_DEVICE="cuda",
        OMP_NUM_THREADS="1",
    )


def fixed_batch(vocab_size: int):
    """The same batch in every process: per-sequence dicts as verl's agent-loop worker stores them."""
    import torch
    from verl.utils.tensordict_utils import list_of_dict_to_tensordict

    generator = torch.Generator().manual_seed(BATCH_SEED)
    rows = []
    for prompt_len, response_len in SEQUENCE_LENGTHS:
        prompts = torch.randint(3, vocab_size, (prompt_len,), generator=generator)
        responses = torch.randint(3, vocab_size, (response_len,), generator=generator)
        input_ids = torch.cat([prompts, responses])
        old = -math.log(vocab_size) + OLD_LOG_PROB_NOISE * torch.randn(response_len, generator=generator)
        advantages = ADVANTAGE_SCALE * torch.randn(1, generator=generator).expand(response_len).clone()
        rows.append(
            {
                "prompts": prompts,
                "responses": responses,
                "input_ids": input_ids,
                "position_ids": torch.arange(input_ids.numel()),
                "attention_mask": torch.ones_like(input_ids),
                "response_mask": torch.ones(response_len, dtype=torch.int64),
                "loss_mask": torch.ones(response_len, dtype=torch.int64),
                "old_log_probs": old.float(),
                "advantages": advantages.float(),
            }
        )
    return list_of_dict_to_tensordict(rows)


def run_variant(model_dir: str, overrides: list[str]) -> dict:
    """Build the actor for the overrides, score the batch, update once; what came out."""
    from verl.utils import tensordict_utils as tu
    from verl.workers.engine_workers import ActorRolloutRefWorker
    from verl.workers.utils.padding import response_from_nested

    from medical_team.launcher.config.compose import compose_config

    config = compose_config(
        [
            "profile=cpu-smoke",
            f"medplay.model.path={model_dir}",
            f"actor_rollout_ref.actor.entropy_coeff={ENTROPY_COEFF}",
            # One optimizer step over the whole batch in one micro-batch.
            f"actor_rollout_ref.actor.ppo_mini_batch_size={len(SEQUENCE_LENGTHS)}",
            f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={len(SEQUENCE_LENGTHS)}",
            f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={len(SEQUENCE_LENGTHS)}",
            # The update compares the paths' policy loss alone: no reference model, so no KL term in the loss.
            "actor_rollout_ref.actor.use_kl_loss=false",
            *overrides,
        ]
    )
    actor = config.actor_rollout_ref
    worker = ActorRolloutRefWorker(actor, role="actor")
    worker.init_model()

    batch = fixed_batch(worker.actor.model_config.hf_config.vocab_size)
    scored = batch.clone()
    tu.assign_non_tensor(scored, calculate_entropy=True, compute_loss=False, temperature=actor.rollout.temperature)
    out = worker.compute_log_prob(scored)
    log_probs = response_from_nested(out["log_probs"], batch["response_mask"])
    entropy = response_from_nested(out["entropy"], batch["response_mask"])

    update = batch.clone()
    tu.assign_non_tensor(
        update,
        calculate_entropy=True,
        global_batch_size=len(SEQUENCE_LENGTHS),
        mini_batch_size=len(SEQUENCE_LENGTHS),
        epochs=1,
        seed=0,
        dataloader_kwargs={"shuffle": False},
        temperature=actor.rollout.temperature,
    )
    metrics = tu.get(worker.update_actor(update), "metrics")
    return {
        "log_probs": [t.clone() for t in log_probs.unbind()],
        "entropy": [t.clone() for t in entropy.unbind()],
        **{name: _scalar(metrics[name]) for name in ("actor/pg_loss", "actor/entropy_loss", "loss", "grad_norm")},
    }


def _scalar(value) -> float:
    """One metric of one mini-batch (verl reports a list per micro-batch or a plain number)."""
    return float(value[0] if isinstance(value, list) else value)


def main(argv: list[str]) -> int:
    """Run each variant in order (name=override,override,...), non-fused ones first; save the results."""
    import torch

    model_dir, output, *variants = argv
    single_rank_environment()
    import medical_team.plugin.cpu  # noqa: F401 - the `cpu` platform and patches, as cpu-smoke loads them

    results = {}
    fused_seen = None
    for variant in variants:
        name, _, joined = variant.partition("=")
        overrides = [item for item in joined.split(",") if item]
        fused = "actor_rollout_ref.model.use_fused_kernels=true" in overrides
        if fused_seen and not fused:
            raise SystemExit(f"variant {name!r} comes after the fused variant {fused_seen!r}: run non-fused ones first")
        fused_seen = fused_seen or (name if fused else None)
        results[name] = run_variant(model_dir, overrides)
    torch.save(results, Path(output))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
