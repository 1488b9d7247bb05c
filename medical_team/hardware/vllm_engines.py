"""Each vLLM engine's memory on the card: weights, overhead, and the KV cache its share leaves or the config gives.

The rollout's engine and, when served here, the judge's: what their KV caches hold (tokens, longest requests at
once), the bytes `medplay train` hands each engine (launcher/plan/kv_caches.py), and the problem when one cannot
hold a single request. The probe's judge note reads the same figures.
"""

from __future__ import annotations

from dataclasses import dataclass

from medical_team.hardware.memory_terms import MIB, VLLM_OVERHEAD_GIB
from medical_team.hardware.plan_inputs import (
    JUDGE_KV_KEY,
    JUDGE_SHARE_KEY,
    ROLLOUT_KV_KEY,
    ROLLOUT_SHARE_KEY,
    PlanInputs,
)
from medical_team.models.shape import GIB


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
    engines = [("rollout", inputs.policy, inputs.rollout_share, inputs.rollout_kv_bytes, None, inputs.max_sequence,
                ROLLOUT_SHARE_KEY, ROLLOUT_KV_KEY)]  # fmt: skip
    if inputs.judge is not None:
        engines.append(("judge", inputs.judge, inputs.judge_share, inputs.judge_kv_bytes, inputs.judge_quantization,
                        inputs.judge_max_model_len, JUDGE_SHARE_KEY, JUDGE_KV_KEY))  # fmt: skip
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
