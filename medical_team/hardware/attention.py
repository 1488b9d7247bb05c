"""The policy's attention implementation and the overrides a run without flash-attn trains with."""

from __future__ import annotations

# The config key of the policy's attention implementation.
ATTENTION_KEY = "actor_rollout_ref.model.override_config.attn_implementation"
# verl's default attention, the only one that needs the flash-attn package (sdpa and eager come with torch).
FLASH_ATTENTION = "flash_attention_2"
# Padding removal packs sequences for flash-attn: a run with any other attention trains without it.
NO_PADDING_REMOVAL = "actor_rollout_ref.model.use_remove_padding=false"


def attention_overrides(implementation: str) -> list[str]:
    """The overrides that make a run train with `implementation`: none for flash-attn's, else it without padding removal."""
    if implementation == FLASH_ATTENTION:
        return []
    return [f"++{ATTENTION_KEY}={implementation}", NO_PADDING_REMOVAL]
