"""verl's memory-saving log-prob paths give the plain path's numbers: fused kernels, chunked or recomputed entropy, padding removal.

Each variant is verl's own FSDP2 actor (`ActorRolloutRefWorker`, role `actor`) on the tiny model in
fp32, built from the `cpu-smoke` config plus the variant's overrides (`logprob_paths.py`, one process
for all: the fused variants run last because verl patches the model class's `forward` for good). For
a batch of four sequences of different lengths each variant reports the response log-probs and
entropy of `compute_log_prob`, and the policy loss, entropy loss and gradient norm of one
`update_actor` (verl's `ppo_loss` with an entropy bonus, so the entropy's backward counts too).

Padding removal (`use_remove_padding=true`) packs the batch into one row with restarting position ids
and no attention mask. Under `sdpa` and `eager` that is correct because transformers (5.10) builds a
block-diagonal mask from the position ids when no attention mask and no cache is passed, and verl
calls the model with `use_cache=False`. `test_packing_needs_no_cache` shows the same packing leaking
across sequences once a cache is in play (the size of the error the equality test would catch).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.slow

DRIVER = Path(__file__).with_name("logprob_paths.py")
TOLERANCE = 1e-4  # max abs difference, fp32
LEAK_AT_LEAST = 1e-2  # a packing leak on the tiny model is far above TOLERANCE (measured: 0.22)

FUSED = (
    "actor_rollout_ref.model.use_fused_kernels=true",
    "actor_rollout_ref.model.fused_kernel_options.impl_backend=torch",
)
NO_FUSED = ("actor_rollout_ref.model.use_fused_kernels=false",)
RMPAD = ("actor_rollout_ref.model.use_remove_padding=true",)
CHUNKED = (
    "actor_rollout_ref.actor.entropy_from_logits_with_chunking=true",
    # Smaller than the batch's 240 tokens, so the entropy really is computed in several chunks.
    "actor_rollout_ref.actor.entropy_from_logits_chunk_size=16",
)
RECOMPUTED = ("actor_rollout_ref.actor.entropy_checkpointing=true",)
EAGER = ("actor_rollout_ref.model.override_config.attn_implementation=eager",)

# Order matters: every non-fused variant before the first fused one.
VARIANTS: dict[str, tuple[str, ...]] = {
    "plain": NO_FUSED,
    "entropy_checkpointing": NO_FUSED + RECOMPUTED,
    "remove_padding_sdpa": NO_FUSED + RMPAD,
    "remove_padding_eager": NO_FUSED + RMPAD + EAGER,
    "remove_padding_chunked_entropy": NO_FUSED + RMPAD + CHUNKED,
    "remove_padding_entropy_checkpointing": NO_FUSED + RMPAD + RECOMPUTED,
    "fused_torch": FUSED,
    "fused_torch_remove_padding": FUSED + RMPAD,
}
SCALARS = ("actor/pg_loss", "actor/entropy_loss", "loss", "grad_norm")


@pytest.fixture(scope="module")
def results(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Every variant's outputs, from one run of the driver."""
    output = tmp_path_factory.mktemp("logprob-paths") / "results.pt"
    args = [f"{name}={','.join(overrides)}" for name, overrides in VARIANTS.items()]
    run = subprocess.run(
        [sys.executable, str(DRIVER), str(tiny_model_dir), str(output), *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return torch.load(output)


def max_diff(left: list[torch.Tensor], right: list[torch.Tensor]) -> float:
    """Largest absolute difference over the sequences' response tokens."""
    assert [t.shape for t in left] == [t.shape for t in right]
    return max((a - b).abs().max().item() for a, b in zip(left, right, strict=True))


def test_plain_path_is_fp32_and_not_degenerate(results: dict[str, dict]) -> None:
    plain = results["plain"]
    assert all(t.dtype == torch.float32 for t in plain["log_probs"])
    assert [t.numel() for t in plain["log_probs"]] == [23, 48, 5, 31]
    assert plain["grad_norm"] > 0 and plain["actor/pg_loss"] != 0


@pytest.mark.parametrize("variant", [name for name in VARIANTS if name != "plain"])
def test_variant_equals_plain_path(results: dict[str, dict], variant: str) -> None:
    plain, other = results["plain"], results[variant]
    assert max_diff(plain["log_probs"], other["log_probs"]) < TOLERANCE
    assert max_diff(plain["entropy"], other["entropy"]) < TOLERANCE
    for name in SCALARS:
        assert other[name] == pytest.approx(plain[name], abs=TOLERANCE), name


def test_packing_needs_no_cache(tiny_model_dir: Path) -> None:
    """Position ids alone separate packed sequences only without a cache: with one, attention leaks across them."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, attn_implementation="sdpa").eval()
    generator = torch.Generator().manual_seed(0)
    first, second = (
        torch.randint(3, 1000, (60,), generator=generator),
        torch.randint(3, 1000, (53,), generator=generator),
    )
    packed = torch.cat([first, second])[None]
    positions = torch.cat([torch.arange(60), torch.arange(53)])[None]

    def second_log_probs(logits: torch.Tensor) -> torch.Tensor:
        return logits.log_softmax(-1)[0, :-1].gather(-1, second[1:, None]).squeeze(-1)

    with torch.no_grad():
        alone = second_log_probs(model(second[None], use_cache=False).logits)
        no_cache = second_log_probs(model(packed, position_ids=positions, use_cache=False).logits[:, 60:])
        cached = second_log_probs(model(packed, position_ids=positions, use_cache=True).logits[:, 60:])
    assert (no_cache - alone).abs().max().item() < TOLERANCE
    assert (cached - alone).abs().max().item() > LEAK_AT_LEAST
