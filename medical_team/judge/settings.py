"""The judge's settings: one shape of `medplay.judge` (configs/medplay.yaml), used by training and `medplay judge`.

Training builds it once from the composed config (`verl_ext/settings.py` checks every key first); the
`medplay judge` commands start from the same section of the packaged configs/medplay.yaml and apply their
options. Values live in the YAML only: no field here has a default. `packaged_judge_settings()` gives the
YAML's values to callers without a composed config (the judge commands, tests, scripts).
"""

from __future__ import annotations

import dataclasses
import importlib.resources
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from medical_team.judge.retry import RetryPolicy

JUDGE_BACKENDS = ("rules", "vllm", "hf", "openai", "http")
# Backends whose verdicts come from a model reading the rewrite (rules only checks and echoes the intent).
MODEL_JUDGE_BACKENDS = ("vllm", "hf", "openai", "http")
# Backends `medplay judge serve` and `medplay judge audit` build in-process (vllm is served by `medplay train`).
LOCAL_BACKENDS = ("rules", "hf", "openai")


@dataclass(frozen=True)
class RuleSettings:
    """Bounds of the rule checks: a rewrite shorter than min or longer than max times the seed is not faithful."""

    min_length_ratio: float
    max_length_ratio: float

    def __post_init__(self) -> None:
        if not 0 < self.min_length_ratio <= 1 <= self.max_length_ratio:
            raise ValueError(
                f"length ratio band must satisfy 0 < min <= 1 <= max, got "
                f"[{self.min_length_ratio}, {self.max_length_ratio}]"
            )


@dataclass(frozen=True)
class ServeSettings:
    """`medplay.judge.serve`: the vLLM OpenAI server `medplay train` starts for the `vllm` backend."""

    gpu_memory_utilization: float
    kv_cache_memory_bytes: int | None
    max_model_len: int | None
    max_num_seqs: int
    max_tokens: int
    dtype: str
    enforce_eager: bool
    startup_timeout_s: float
    port: int
    concurrency: int
    extra_args: tuple[str, ...]


@dataclass(frozen=True)
class JudgeSettings:
    """`medplay.judge`: which judge settles adversarial games, how to reach it, and how it is checked."""

    backend: str
    url: str | None
    model: str | None
    base_url: str | None
    timeout_s: float
    batch_size: int
    attempts: int
    max_consecutive_failures: int
    min_length_ratio: float
    max_length_ratio: float
    server_port: int
    serve: ServeSettings
    gold_probe_fraction: float
    gold_accuracy_floor: float
    gold_min_count: int

    @property
    def probed(self) -> bool:
        """True when gold probes are mixed into this judge's requests (a model judge and a fraction > 0)."""
        return self.backend != "rules" and self.gold_probe_fraction > 0

    @property
    def rules(self) -> RuleSettings:
        """The rule checks' bounds."""
        return RuleSettings(self.min_length_ratio, self.max_length_ratio)

    @property
    def retry(self) -> RetryPolicy:
        """Retries of one judge call (http/openai)."""
        from medical_team.judge.retry import RetryPolicy

        return RetryPolicy(attempts=self.attempts)

    @classmethod
    def from_mapping(cls, section: Mapping[str, Any]) -> JudgeSettings:
        """Settings from a `medplay.judge` mapping holding every key (checked by the caller)."""
        serve = dict(section["serve"])
        serve["extra_args"] = tuple(serve["extra_args"] or ())
        return cls(**{**section, "serve": ServeSettings(**serve)})

    def with_changes(self, **changes: Any) -> JudgeSettings:
        """A copy with top-level fields, and `serve` fields given as a mapping, replaced."""
        serve = changes.pop("serve", None)
        if serve is not None:
            changes["serve"] = dataclasses.replace(self.serve, **serve)
        return dataclasses.replace(self, **changes)


@lru_cache(maxsize=1)
def packaged_judge_section() -> dict[str, Any]:
    """The `medplay.judge` section of the packaged configs/medplay.yaml, as plain values."""
    from omegaconf import OmegaConf

    text = (importlib.resources.files("medical_team.configs") / "medplay.yaml").read_text()
    return OmegaConf.to_container(OmegaConf.create(text).medplay.judge, resolve=True)


def packaged_judge_settings(**changes: Any) -> JudgeSettings:
    """configs/medplay.yaml's `medplay.judge` (no profile, no overrides) with `changes`; for callers without a run."""
    return JudgeSettings.from_mapping(packaged_judge_section()).with_changes(**changes)
