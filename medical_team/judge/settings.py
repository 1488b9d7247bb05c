"""The judge's settings: the schema of `medplay.judge` (configs/medplay.yaml), used by training and `medplay judge`.

Training binds it as part of the `medplay:` section (`run/settings.py`); callers without a composed
config (the judge commands, tests, scripts) bind the packaged YAML's section with their changes through
`packaged_judge_settings`. Both go through `medical_team.common.schema.bind`; the values live in the YAML only.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from medical_team.common.schema import Rules, above, at_least, bind, check
from medical_team.configs import packaged_section
from medical_team.judge.judge_kinds import BACKEND_KINDS, JUDGE_BACKENDS, backend_kind

if TYPE_CHECKING:
    from medical_team.judge.judge_kinds import BackendKind
    from medical_team.judge.retry import RetryPolicy


def _share() -> Any:
    """A field holding a number in [0, 1]."""
    return check(lambda x: 0 <= x <= 1, "a number in [0, 1]")


@dataclass(frozen=True)
class RuleSettings(Rules):
    """Bounds of the rule checks: a rewrite shorter than min or longer than max times the seed is not faithful."""

    min_length_ratio: float
    max_length_ratio: float

    @staticmethod
    def problems(values: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
        """The length ratio band holds 1 (a copy is never cut for its length)."""
        low, high = values.get("min_length_ratio"), values.get("max_length_ratio")
        if low is not None and high is not None and not 0 < low <= 1 <= high:
            yield "min_length_ratio", f"{low} with max {high}: the length ratio band must satisfy 0 < min <= 1 <= max"


@dataclass(frozen=True)
class ServeSettings:
    """`medplay.judge.serve`: the vLLM OpenAI server `medplay train` starts for the `vllm` backend."""

    gpu_memory_utilization: float = check(lambda x: 0 < x < 1, "a number in (0, 1)")
    kv_cache_memory_bytes: int | None = at_least(1)
    max_model_len: int | None = at_least(1)
    max_num_seqs: int = at_least(1)
    max_tokens: int = at_least(1)
    dtype: str
    enforce_eager: bool
    startup_timeout_s: float = above(0, "a number of seconds")
    port: int = check(lambda p: 0 <= p < 65536, "0 (a free port) or a port number (1-65535)")
    concurrency: int = at_least(1)
    extra_args: tuple[str, ...]


@dataclass(frozen=True)
class JudgeSettings(Rules):
    """`medplay.judge`: which judge settles adversarial games, how to reach it, and how it is checked."""

    backend: str = check(lambda b: b in JUDGE_BACKENDS, f"one of {', '.join(JUDGE_BACKENDS)}")
    url: str | None
    model: str | None
    timeout_s: float = above(0, "a number of seconds")
    batch_size: int = at_least(1)
    attempts: int = at_least(1)
    max_consecutive_failures: int = at_least(1)
    min_length_ratio: float
    max_length_ratio: float
    server_port: int = check(lambda p: 0 < p < 65536, "a port number (1-65535)")
    serve: ServeSettings
    gold_probe_fraction: float = _share()
    gold_accuracy_floor: float = _share()
    gold_min_count: int = at_least(1)

    @staticmethod
    def problems(values: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
        """Each backend's endpoint or model is set (a judge server's URL may come later), the rule checks' band is sound."""
        kind = BACKEND_KINDS.get(values.get("backend"))
        if kind:
            problem = missing_judge_fields(kind, values, later_ok=True)
            if problem:
                yield problem
        yield from RuleSettings.problems(values)

    @property
    def probed(self) -> bool:
        """True when gold probes are mixed into this judge's requests (a model judge and a fraction > 0)."""
        return self.kind.judged_by_model and self.gold_probe_fraction > 0

    @property
    def kind(self) -> BackendKind:
        """What the backend is and needs."""
        return backend_kind(self.backend)

    @property
    def rules(self) -> RuleSettings:
        """The rule checks' bounds."""
        return RuleSettings(self.min_length_ratio, self.max_length_ratio)

    @property
    def retry(self) -> RetryPolicy:
        """Retries of one judge call (http/openai)."""
        from medical_team.judge.retry import RetryPolicy

        return RetryPolicy(attempts=self.attempts)


def missing_judge_fields(kind: BackendKind, values: Mapping[str, Any], *, later_ok: bool) -> tuple[str, str] | None:
    """(field, message) when a field the backend needs is unset, else None.

    `later_ok`: a judge server's URL may stay unset in the settings: the container's pipeline starts the server once
    the settings are checked and sets the URL then; `medplay train` asks for it in its run plan (`later_ok=False`).
    """
    needed = [field for field in kind.needs if not (later_ok and kind.behind_judge_server and field == "url")]
    missing = [field for field in needed if not values.get(field)]
    if not missing:
        return None
    together = "".join(f"with medplay.judge.{field}, " for field in kind.needs[1:])
    return missing[0], f"{together}required when judge.backend is {kind.name} {kind.why}"


def packaged_judge_settings(**changes: Any) -> JudgeSettings:
    """configs/medplay.yaml's `medplay.judge` with `changes` (`serve` as a mapping of its changes), checked.

    For callers without a composed run config: the judge commands, tests and scripts.
    """
    section = packaged_section()["judge"]
    serve = {**section["serve"], **changes.pop("serve", {})}
    header = "invalid judge settings (configs/medplay.yaml's medplay.judge with the options given)"
    return bind(JudgeSettings, {**section, **changes, "serve": serve}, "medplay.judge", header)
