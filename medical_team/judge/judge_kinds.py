"""The judge backends by name: one entry each, with what the backend is, what it needs and which function builds it.

This is the one place a backend's name is looked at (tests/judge/test_judge_kinds.py walks the package for comparisons).
Every other module asks `backend_kind(name)` what a backend is (a model reads the rewrites or not, where its verdicts
are made), what it needs in `medplay.judge` (a URL, an endpoint, a model folder) and how it is built.

The module imports nothing, not even the rest of the judge (medical_team/judge/__init__.py imports nothing either):
the launcher, the settings and the pipeline (`medplay judge kind`) read it without the judge's code. So an entry names its builder as `module:function` in `medical_team.judge`, and
`medical_team.judge.backends.build_judge` imports it when a judge is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Where(str, Enum):
    """Where a backend's verdicts are made (`medplay judge kind` prints the value; the appliance's pipeline reads it)."""

    SERVED_HERE = "served-here"  # a vLLM server `medplay train` starts on this machine's GPU (a share of the card)
    JUDGE_SERVER = "judge-server"  # medplay's judge server (`medplay judge serve`) at `medplay.judge.url`
    IN_PROCESS = "in-process"  # built in the process that asks: the trainer's workers, `medplay judge serve`/`audit`


@dataclass(frozen=True, kw_only=True)
class BackendKind:
    """One judge backend: where its verdicts come from, which `medplay.judge` fields it needs, what builds it."""

    name: str
    judged_by_model: bool  # a model reads the rewrite (`rules` only checks it and echoes the attacker's intent)
    where: Where
    needs: tuple[str, ...] = ()  # the `medplay.judge` fields it cannot run without
    why: str = ""  # what the needed fields are: the end of the settings' message when one is missing
    builder: str  # `module:function` in medical_team.judge: (JudgeSettings, Runtime) -> Judge

    @property
    def served_here(self) -> bool:
        """True when `medplay train` starts its vLLM server on this machine's GPU."""
        return self.where is Where.SERVED_HERE

    @property
    def in_process(self) -> bool:
        """True when `medplay judge serve`, `medplay judge audit` and the trainer's workers build it themselves."""
        return self.where is Where.IN_PROCESS

    @property
    def behind_judge_server(self) -> bool:
        """True when it is reached through medplay's judge server (`medplay judge serve`)."""
        return self.where is Where.JUDGE_SERVER

    @property
    def reads_a_model_folder(self) -> bool:
        """True when `model` is a local folder this machine loads (hf, vllm), not a name an endpoint serves."""
        return self.needs == ("model",)

    @property
    def loads_a_model_here(self) -> bool:
        """True when building it loads the model into the building process (hf), whose device then matters."""
        return self.in_process and self.reads_a_model_folder

    def describe(self, fields: dict[str, object]) -> str:
        """The backend with the values of the fields it needs, e.g. `openai http://host/v1 medgemma`."""
        return " ".join([self.name, *(str(fields[field]) for field in self.needs)])


_BUILDERS = "medical_team.judge.backends"
_LOCAL_FOLDER = "(a local model folder)"

BACKEND_KINDS: dict[str, BackendKind] = {
    kind.name: kind
    for kind in (
        BackendKind(name="rules", judged_by_model=False, where=Where.IN_PROCESS, builder=f"{_BUILDERS}:rules_judge"),
        # the served judge is an OpenAI-compatible endpoint once `medplay train` has started it and set its URL
        BackendKind(
            name="vllm", judged_by_model=True, where=Where.SERVED_HERE, needs=("model",), why=_LOCAL_FOLDER,
            builder=f"{_BUILDERS}:endpoint_judge",
        ),
        BackendKind(
            name="hf", judged_by_model=True, where=Where.IN_PROCESS, needs=("model",), why=_LOCAL_FOLDER,
            builder=f"{_BUILDERS}:local_model_judge",
        ),
        BackendKind(
            name="openai", judged_by_model=True, where=Where.IN_PROCESS, needs=("url", "model"),
            why="(a remote OpenAI-compatible judge); for smoke tests only, medplay.judge.backend=rules",
            builder=f"{_BUILDERS}:endpoint_judge",
        ),
        BackendKind(
            name="http", judged_by_model=True, where=Where.JUDGE_SERVER, needs=("url",),
            why="(e.g. http://127.0.0.1:8100)", builder=f"{_BUILDERS}:http_judge",
        ),
    )
}  # fmt: skip
JUDGE_BACKENDS = tuple(BACKEND_KINDS)
# Backends `medplay judge serve` builds in its own process (vllm is served by `medplay train`).
LOCAL_BACKENDS = tuple(name for name, kind in BACKEND_KINDS.items() if kind.in_process)
# Backends a command asks from its own process (`medplay judge audit`, `medplay eval --crossplay`): those it builds,
# and a running judge server.
REACHABLE_BACKENDS = tuple(name for name, kind in BACKEND_KINDS.items() if not kind.served_here)


def backend_kind(name: str) -> BackendKind:
    """The kind of backend `name` (ValueError naming the choices for an unknown one)."""
    try:
        return BACKEND_KINDS[name]
    except KeyError:
        raise ValueError(f"unknown judge backend {name!r}; choose one of {', '.join(JUDGE_BACKENDS)}") from None
